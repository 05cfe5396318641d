package refpolicy

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// MaxChecks is how many candidate queries the policy runs with <sql>
// before it answers; a check that returns no rows or an error moves it to
// the next candidate.
const MaxChecks = 3

// maxProbeParts bounds the SELECTs a value probe unites.
const maxProbeParts = 120

// Model answers turns of the multi-turn SQL protocol with weights W.
type Model struct {
	W *Weights
	// situations caches NewSituation by prompt and probe observation (the
	// candidates do not depend on the weights); prompts caches ParsePrompt
	// by the user prompt, which every turn of an episode sends again.
	situations memo[*Situation]
	prompts    memo[*Prompt]
}

// maxSituations bounds a policy's caches (a situation takes a few
// hundred KB): a training set or an evaluation of a few thousand
// questions fits.
const maxSituations = 4096

// memo is a concurrent cache of values by key that keeps at most
// maxSituations of them, so a long-running server's memory stays
// bounded; past that, values are computed and not kept.
type memo[V any] struct {
	m sync.Map
	n atomic.Int64
}

// get returns the value of key, computed by compute when not cached.
func (c *memo[V]) get(key string, compute func() V) V {
	if v, ok := c.m.Load(key); ok {
		return v.(V)
	}
	v := compute()
	if c.n.Load() >= maxSituations {
		return v
	}
	if prev, loaded := c.m.LoadOrStore(key, v); loaded {
		return prev.(V)
	}
	c.n.Add(1)
	return v
}

// situation is NewSituation through the policy's cache.
func (pol *Model) situation(p *Prompt, probed string) *Situation {
	return pol.situations.get(p.key+"\x00"+probed, func() *Situation { return NewSituation(p, probed) })
}

// prompt is ParsePrompt through the policy's cache.
func (pol *Model) prompt(user string) *Prompt {
	return pol.prompts.get(user, func() *Prompt {
		p := ParsePrompt(user)
		return &p
	})
}

// Exchange is one <sql> turn of the policy and the observation that came
// back.
type Exchange struct{ SQL, Observation string }

// Decision is the policy's next turn and, for a candidate query or a
// solution, the choice behind it and the situation it was chosen in (what
// training needs).
type Decision struct {
	Turn      sqlenv.Turn
	Choice    Choice
	Situation *Situation
}

// Situation is what the policy's choice is made from: the sketch's
// candidates for a prompt once the value probe has been answered.
type Situation struct{ sk *sketch }

// NewSituation builds the candidates for prompt p given the observation
// of its value probe ("" when there was none).
func NewSituation(p *Prompt, probeObservation string) *Situation {
	return &Situation{buildSketch(p, parseHits(probeObservation))}
}

// Render is the SQL of a choice.
func (s *Situation) Render(c Choice) string { return s.sk.render(c) }

// Sampler fixes how candidates are picked: Temperature 0 takes the best
// and then the best variants; above 0 each candidate is drawn from the
// slots' softmax at that temperature with a generator seeded by Seed and
// Stream (the request's seed and its user field).
type Sampler struct {
	Temperature float64
	Seed        uint64
	Stream      uint64
}

// StreamOf hashes a request's user field ("<task id>#<sample>") into a
// sampling stream.
func StreamOf(user string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(user))
	return h.Sum64()
}

// Next decides the turn that follows hist, the policy's own earlier <sql>
// turns with their observations, for prompt p with turnsLeft replies left
// (this one included). The decision depends only on its inputs.
//
// The plan: first a value probe, when the question holds words that may
// be stored values (ProbeSQL); then up to MaxChecks candidate queries,
// each run with <sql>; the first whose observation shows rows is the
// solution; when none does, or the turns run out, the first candidate is.
func (pol *Model) Next(p *Prompt, hist []Exchange, turnsLeft int, s Sampler) Decision {
	probe := p.probe
	if probe != "" && len(hist) == 0 && turnsLeft > 1 {
		return Decision{Turn: sqlenv.Turn{Think: "Look up which stored values the question mentions.", Action: sqlenv.ActionSQL, Body: probe}}
	}
	var probed string
	if probe != "" && len(hist) > 0 && hist[0].SQL == probe {
		probed = hist[0].Observation
		hist = hist[1:]
	}
	sit := pol.situation(p, probed)
	sk := sit.sk
	if len(sk.tables) == 0 {
		return Decision{Turn: sqlenv.Turn{Think: "The schema names no table.", Action: sqlenv.ActionSolution, Body: "SELECT 1"}}
	}
	cands := pol.candidateChoices(sk, len(hist)+1, s)
	answer := func(c Choice, why string) Decision {
		return Decision{Turn: sqlenv.Turn{Think: why, Action: sqlenv.ActionSolution, Body: sk.render(c)}, Choice: c, Situation: sit}
	}
	if n := len(hist); n > 0 && hasRows(hist[n-1].Observation) {
		for _, c := range cands {
			if sk.render(c) == hist[n-1].SQL {
				return answer(c, "The last query returned rows; answer with it.")
			}
		}
	}
	if len(hist) >= MaxChecks || len(hist) >= len(cands) || turnsLeft <= 1 {
		return answer(cands[0], "No check returned rows; answer with the best candidate.")
	}
	c := cands[len(hist)]
	return Decision{Turn: sqlenv.Turn{Think: "Check candidate " + strconv.Itoa(len(hist)+1) + ": " + pol.describe(sk, c), Action: sqlenv.ActionSQL, Body: sk.render(c)}, Choice: c, Situation: sit}
}

// describe says in words what a choice fills in.
func (pol *Model) describe(sk *sketch, c Choice) string {
	var parts []string
	for s := range numSlots {
		k := sk.candidates(s, c[SlotTable])[c[s]]
		if s != SlotTable && k.none {
			continue
		}
		parts = append(parts, s.String()+"="+describeCand(s, k))
	}
	return strings.Join(parts, ", ")
}

func describeCand(s Slot, k cand) string {
	switch s {
	case SlotSelect, SlotOrder:
		d := expr(k.agg, k.col)
		if s == SlotOrder {
			d += " " + dirName(k.desc)
		}
		return d
	case SlotWhere:
		return k.col + " " + k.op + " " + k.val
	case SlotLimit:
		return strconv.Itoa(k.limit)
	}
	return k.col
}

// candidateChoices returns up to n distinct-SQL choices in the order the
// policy tries them.
func (pol *Model) candidateChoices(sk *sketch, n int, s Sampler) []Choice {
	var out []Choice
	seen := map[string]bool{}
	add := func(c Choice) {
		if q := sk.render(c); !seen[q] {
			seen[q] = true
			out = append(out, c)
		}
	}
	if s.Temperature <= 0 {
		best := pol.argmax(sk, -1)
		add(best)
		type variant struct {
			c    Choice
			drop float64
		}
		var vs []variant
		for sl := range numSlots {
			scores := pol.scores(sk, sl, best[SlotTable])
			second, drop := -1, math.Inf(1)
			for i, v := range scores {
				if i != best[sl] && scores[best[sl]]-v < drop {
					second, drop = i, scores[best[sl]]-v
				}
			}
			if second < 0 {
				continue
			}
			c := best
			if sl == SlotTable {
				c = pol.argmax(sk, second)
			} else {
				c[sl] = second
			}
			vs = append(vs, variant{c, drop})
		}
		// stable: equal drops keep slot order
		for i := 1; i < len(vs); i++ {
			for j := i; j > 0 && vs[j].drop < vs[j-1].drop; j-- {
				vs[j], vs[j-1] = vs[j-1], vs[j]
			}
		}
		for _, v := range vs {
			if len(out) >= n {
				break
			}
			add(v.c)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(s.Seed, s.Stream))
	for tries := 0; len(out) < n && tries < 8*n; tries++ {
		add(pol.sample(sk, rng, s.Temperature))
	}
	return out
}

// argmax fills every slot with its best candidate; table, when not
// negative, fixes the table.
func (pol *Model) argmax(sk *sketch, table int) Choice {
	var c Choice
	if table < 0 {
		table = best(pol.scores(sk, SlotTable, 0))
	}
	c[SlotTable] = table
	for s := SlotSelect; s < numSlots; s++ {
		c[s] = best(pol.scores(sk, s, table))
	}
	return c
}

func best(xs []float64) int {
	b := 0
	for i, x := range xs {
		if x > xs[b] {
			b = i
		}
	}
	return b
}

// sample draws every slot from its softmax at temperature t.
func (pol *Model) sample(sk *sketch, rng *rand.Rand, t float64) Choice {
	var c Choice
	c[SlotTable] = draw(softmax(pol.scores(sk, SlotTable, 0), t), rng)
	for s := SlotSelect; s < numSlots; s++ {
		c[s] = draw(softmax(pol.scores(sk, s, c[SlotTable]), t), rng)
	}
	return c
}

func draw(p []float64, rng *rand.Rand) int {
	u := rng.Float64()
	for i, x := range p {
		if u < x {
			return i
		}
		u -= x
	}
	return len(p) - 1
}

// scores are the logits of slot s's candidates given the table.
func (pol *Model) scores(sk *sketch, s Slot, table int) []float64 {
	cs := sk.candidates(s, table)
	out := make([]float64, len(cs))
	w := pol.W[s]
	for i, c := range cs {
		var v float32
		for _, f := range c.feats {
			v += w[f]
		}
		out[i] = float64(v)
	}
	return out
}

// softmax at temperature t (t > 0).
func softmax(xs []float64, t float64) []float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	out := make([]float64, len(xs))
	var z float64
	for i, x := range xs {
		out[i] = math.Exp((x - m) / t)
		z += out[i]
	}
	for i := range out {
		out[i] /= z
	}
	return out
}

var rowCount = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^ROW_COUNT: (\d+)`) })

// hasRows reports whether an observation shows a result with a row that
// is not all NULL.
func hasRows(obs string) bool {
	m := rowCount().FindStringSubmatch(obs)
	if !strings.HasPrefix(obs, "STATUS: OK") || m == nil || m[1] == "0" {
		return false
	}
	lines := strings.Split(obs, "\n")
	if m[1] == "1" && len(lines) >= 4 {
		for _, v := range strings.Split(lines[3], " | ") {
			if v != "NULL" {
				return true
			}
		}
		return false
	}
	return true
}

// ProbeSQL is p's value probe (computed by ParsePrompt): one query that
// looks up the question's possible values. It is "" when there is nothing
// to look up.
func ProbeSQL(p *Prompt) string { return p.probe }

// probeSQL is the value probe for p: one query that looks up, in every
// text column, the question's words and capitalised phrases that may be
// stored values (case-insensitive LIKE without wildcards), and returns
// table, column and stored value of each hit. It is "" when there is
// nothing to look up.
func probeSQL(p *Prompt) string {
	spans := valueSpans(p.raw)
	if len(spans) == 0 {
		return ""
	}
	var parts []string
	for _, t := range p.Tables {
		for _, c := range t.Columns {
			if !c.Text {
				continue
			}
			for _, sp := range spans {
				if len(parts) == maxProbeParts {
					break
				}
				parts = append(parts, fmt.Sprintf("SELECT %s, %s, %s FROM %s WHERE %s LIKE %s",
					quoteString(t.Name), quoteString(c.Name), quoteIdent(c.Name), quoteIdent(t.Name), quoteIdent(c.Name), quoteString(escapeLike(sp))))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " UNION ") + " LIMIT 50"
}

// escapeLike keeps LIKE's wildcards out of a span (they are rare in
// questions; a span holding one is looked up as is minus the wildcard).
func escapeLike(s string) string { return likeWildcards.Replace(s) }

var likeWildcards = strings.NewReplacer("%", "", "_", "")

// valueSpans are the words that may be stored values: content words of
// two letters or more that are not numbers, and runs of capitalised words.
func valueSpans(raw []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if k := strings.ToLower(s); !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	var run []string
	flush := func() {
		if len(run) > 1 {
			add(strings.Join(run, " "))
		}
		run = nil
	}
	for i, w := range raw {
		lw := strings.ToLower(w)
		if stopwords[lw] || len([]rune(w)) < 2 || isNumber(w) {
			flush()
			continue
		}
		add(w)
		if r := []rune(w); i > 0 && unicode.IsUpper(r[0]) {
			run = append(run, w)
		} else {
			flush()
		}
	}
	flush()
	return out
}

// parseHits reads the probe's observation: rows of table | column | value.
func parseHits(obs string) []hit {
	if !strings.HasPrefix(obs, "STATUS: OK") {
		return nil
	}
	lines := strings.Split(obs, "\n")
	var out []hit
	for _, l := range lines[min(3, len(lines)):] {
		f := splitCells(l)
		if len(f) == 3 {
			out = append(out, hit{f[0], f[1], f[2]})
		}
	}
	return out
}

// splitCells splits an observation row at unescaped " | " and undoes the
// observation's escapes.
func splitCells(l string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l):
			i++
			switch l[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(l[i])
			}
		case strings.HasPrefix(l[i:], " | "):
			out = append(out, b.String())
			b.Reset()
			i += 2
		default:
			b.WriteByte(l[i])
		}
	}
	return append(out, b.String())
}
