package audit

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
)

// The checks of the gold audit.
const (
	CheckNoGoldInPrompts = "no-gold-in-prompts" // no policy-visible byte holds a task's gold, whole or a long fragment
	CheckNoGoldFields    = "no-gold-fields"     // the tasks file the rollout read carries no gold field
)

// GoldLeak is a task whose gold reached the policy in a rollout.
type GoldLeak struct {
	Label    string `json:"label"`
	TaskID   string `json:"task_id"`
	Samples  []int  `json:"samples"`
	Match    string `json:"match"`    // "gold" (the whole normalised gold) or "fragment"
	Fragment string `json:"fragment"` // what was found, normalised
	Role     string `json:"role"`     // the message role it was found in
}

// Gold checks gold isolation for each labelled evaluation: no
// policy-visible byte its rollout sent (every system and user message of
// every recorded request body: prompts, observations, correction prompts;
// the model's own replies are not policy input) holds the task's gold SQL,
// normalised (case, whitespace, quoting, aliases and qualifiers dropped),
// or any fragment of it GoldSubstring normalised characters long; and the
// tasks file the rollout read, verified against its recorded digest,
// carries no gold field. The gold is the file the grading recorded by
// digest, verified before use.
func Gold(ctx context.Context, l *ledger.Ledger, s Subjects, o Options) (*Report, error) {
	return runGold(ctx, l, s, o, nil)
}

func runGold(ctx context.Context, l *ledger.Ledger, s Subjects, o Options, cache *scanCache) (*Report, error) {
	o = o.withDefaults()
	r := newReport(AuditGold, s)
	evals, err := loadEvals(ctx, l, s.Runs)
	if err != nil {
		return nil, err
	}
	if len(evals) == 0 {
		return nil, fmt.Errorf("audit gold: name the evaluations (runs)")
	}
	// The rollouts of the evaluations whose gold verifies are scanned at
	// the same time, before their findings are written in order.
	if cache == nil {
		cache = &scanCache{}
	}
	golds, goldErrs := make([]map[string]string, len(evals)), make([]error, len(evals))
	var scanned []*evalRun
	for i, e := range evals {
		if golds[i], goldErrs[i] = verifiedGold(ctx, l, e, cache); goldErrs[i] == nil {
			scanned = append(scanned, e)
		}
	}
	if err := cache.scanAll(ctx, l, scanned); err != nil {
		return nil, err
	}
	// Each evaluation's messages are normalised and matched against its
	// gold at the same time, into a report of its own, and its findings
	// are then added in the evaluations' order. They share most messages
	// (the system prompt, each database's schema) and their gold: each
	// distinct message is normalised, and each gold made a matcher, once
	// for all of them.
	norm := newShared(normalizeSQL)
	matchers := newShared(func(sql string) *goldMatcher { return newGoldMatcher(sql, o.GoldSubstring) })
	found := make([]*Report, len(evals))
	err = ledger.ForEach(ctx, len(evals), func(ctx context.Context, i int) error {
		if goldErrs[i] != nil {
			return nil
		}
		found[i] = newReport(AuditGold, s)
		return scanGold(ctx, l, found[i], evals[i], golds[i], cache, norm, matchers)
	})
	if err != nil {
		return nil, err
	}
	checkedTasks := map[string]bool{}
	for i, e := range evals {
		seqs := []int64{e.rolloutRun.StartedSeq, e.gradeRun.StartedSeq}
		if !checkedTasks[e.rollout.Tasks] {
			checkedTasks[e.rollout.Tasks] = true
			goldFields(ctx, l, r, e, seqs, cache)
		}
		if goldErrs[i] != nil {
			r.fail(CheckNoGoldInPrompts, nil, seqs, "%s: %v", e.Label, goldErrs[i])
			continue
		}
		for _, f := range found[i].Findings {
			r.add(f)
		}
		if o.Mutate > 0 {
			if err := goldMutation(ctx, l, r, e, golds[i], o); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// goldFields checks the tasks file a rollout read, by the digest it
// recorded, wherever the file lies now.
func goldFields(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun, seqs []int64, cache *scanCache) {
	if _, err := cache.readTasks(ctx, l, e.rollout.Tasks, e.rollout.TasksDigest); err != nil {
		r.fail(CheckNoGoldFields, nil, seqs, "%s: %v", e.Label, err)
		return
	}
	r.pass(CheckNoGoldFields, nil, seqs, "%s: tasks file %s carries no gold field", e.Label, e.rollout.Tasks)
}

// verifiedGold reads the gold beside the rollout's tasks, by the digest
// the grading recorded, wherever it lies now.
func verifiedGold(ctx context.Context, l *ledger.Ledger, e *evalRun, cache *scanCache) (map[string]string, error) {
	gs, err := cache.readGold(ctx, l, filepath.Join(e.datasetDir(), dataset.GoldFile), e.grade.GoldDigest)
	if err != nil {
		return nil, fmt.Errorf("cannot read the gold: %w", err)
	}
	out := make(map[string]string, len(gs))
	for _, g := range gs {
		out[g.ID] = g.SQL
	}
	return out, nil
}

// scanGold looks for each task's gold in the distinct policy-visible
// messages of its episodes.
func scanGold(ctx context.Context, l *ledger.Ledger, r *Report, e *evalRun, golds map[string]string, cache *scanCache, norm *shared[string], matchers *shared[*goldMatcher]) error {
	sc, err := cache.scan(ctx, l, e.grade.Rollout)
	if err != nil {
		return err
	}
	leaks, messages := 0, 0
	for _, id := range slices.Sorted(maps.Keys(sc.Tasks)) {
		m := matchers.of(golds[id])
		for _, msg := range sc.Tasks[id].Messages {
			messages++
			match, frag := m.findNormalized(norm.of(msg.Content))
			if match == "" {
				continue
			}
			leaks++
			lk := GoldLeak{Label: e.Label, TaskID: id, Samples: compact(msg.Samples), Match: match, Fragment: frag, Role: msg.Role}
			what := "its whole gold"
			if match == "fragment" {
				what = fmt.Sprintf("a %d-character fragment of its gold", len(frag))
			}
			r.fail(CheckNoGoldInPrompts, lk, msg.Seqs, "%s: task %s: a %s message of rollout %s holds %s (normalised: %q), in samples %v",
				e.Label, id, msg.Role, e.grade.Rollout, what, frag, lk.Samples)
		}
	}
	if leaks == 0 {
		r.pass(CheckNoGoldInPrompts, nil, []int64{e.rolloutRun.StartedSeq}, "%s: no gold in the %d distinct policy-visible messages of the %d episodes of rollout %s",
			e.Label, messages, sc.Episodes, e.grade.Rollout)
	}
	return nil
}

// shared holds a value built from each key, built once for the scans of
// several evaluations at once, which share most keys: each distinct
// message (the system prompt, a database's schema, an observation) is
// normalised once, and each gold query made a matcher once.
type shared[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	build func(string) V
}

func newShared[V any](build func(string) V) *shared[V] {
	return &shared[V]{m: map[string]V{}, build: build}
}

// of returns the value of key, building it only if no scan has.
func (s *shared[V]) of(key string) V {
	s.mu.Lock()
	v, ok := s.m[key]
	s.mu.Unlock()
	if !ok {
		v = s.build(key)
		s.mu.Lock()
		s.m[key] = v
		s.mu.Unlock()
	}
	return v
}

// compact sorts xs and drops repeats.
func compact[T cmp.Ordered](xs []T) []T {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return slices.Compact(xs)
}

// goldMatcher finds one gold query, normalised, in normalised text: the
// whole of it, or any window of its normalised form n characters long.
// Windows are looked for with a rolling hash: only a text window whose
// hash is in filter is looked up among the gold's window hashes, and
// only a window whose hash is among them is compared with the gold. The
// hashes are a sorted slice, not a map of the windows: a gate builds a
// matcher for every task it evaluated, and a map of strings cost three
// times the memory and most of the time of building it.
type goldMatcher struct {
	whole  string
	n      int
	hashes []uint64 // of every window of whole, sorted, without repeats
	filter [filterBits / 64]uint64
	pow    uint64 // rollBase to the power n
}

// The rolling hash of a window w is the sum of w[i]·rollBase^(n-1-i)
// (mod 2^64); its top bits index the filter.
const (
	rollBase   = 0x100000001b3
	filterBits = 1 << 12
)

// minWholeGold is the shortest normalised gold looked for whole: a shorter
// one ("selectcount(*)fromt") would match innocent text.
const minWholeGold = 16

func newGoldMatcher(sql string, n int) *goldMatcher {
	m := &goldMatcher{whole: normalizeSQL(sql), n: n, pow: 1}
	for range n {
		m.pow *= rollBase
	}
	if len(m.whole) >= n {
		m.hashes = make([]uint64, 0, len(m.whole)-n+1)
	}
	m.roll(m.whole, func(_ int, h uint64) bool {
		m.hashes = append(m.hashes, h)
		m.filter[h>>52/64] |= 1 << (h >> 52 % 64)
		return false
	})
	slices.Sort(m.hashes)
	m.hashes = slices.Compact(m.hashes)
	return m
}

// isWindow reports whether w, a window of text whose rolling hash is h,
// is a window of the gold.
func (m *goldMatcher) isWindow(w string, h uint64) bool {
	if m.filter[h>>52/64]&(1<<(h>>52%64)) == 0 {
		return false
	}
	if _, ok := slices.BinarySearch(m.hashes, h); !ok {
		return false
	}
	// Equal hashes of different windows are possible, if unlikely: the
	// window itself decides.
	return strings.Contains(m.whole, w)
}

// roll calls f with the start and hash of each n-character window of t in
// order, until f returns true.
func (m *goldMatcher) roll(t string, f func(i int, h uint64) bool) {
	if m.n <= 0 || len(t) < m.n {
		return
	}
	var h uint64
	for i := range m.n {
		h = h*rollBase + uint64(t[i])
	}
	for i := 0; ; i++ {
		if f(i, h) || i+m.n == len(t) {
			return
		}
		h = h*rollBase + uint64(t[i+m.n]) - uint64(t[i])*m.pow
	}
}

// find returns "gold" or "fragment" and what matched, or "".
func (m *goldMatcher) find(text string) (string, string) {
	return m.findNormalized(normalizeSQL(text))
}

// findNormalized is find on text already normalised.
func (m *goldMatcher) findNormalized(t string) (match, frag string) {
	if len(m.whole) < minWholeGold {
		return "", ""
	}
	if strings.Contains(t, m.whole) {
		return "gold", m.whole
	}
	m.roll(t, func(i int, h uint64) bool {
		if m.isWindow(t[i:i+m.n], h) {
			match, frag = "fragment", t[i:i+m.n]
			return true
		}
		return false
	})
	return match, frag
}

// normalizeSQL folds what does not change a query's meaning, and what a
// leak might change to hide: case, quoting (", ', `, [ ]), alias
// declarations (AS t1), qualifiers (t1. before a column) and all white
// space. It is one pass over the text: it runs on every distinct message
// of every evaluated episode.
func normalizeSQL(s string) string {
	s = strings.ToLower(s)
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`' || c == '[' || c == ']' || asciiSpace(c):
			i++
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsSpace(r) {
				out = append(out, s[i:i+n]...)
			}
			i += n
		case wordByte(c):
			j := i
			for j < len(s) && wordByte(s[j]) {
				j++
			}
			ident := c == '_' || (c >= 'a' && c <= 'z')
			if ident && j < len(s) && s[j] == '.' { // a qualifier
				i = j + 1
				continue
			}
			if s[i:j] == "as" { // an alias declaration: AS name
				k := j
				for k < len(s) && asciiSpace(s[k]) {
					k++
				}
				if k > j && k < len(s) && (s[k] == '_' || (s[k] >= 'a' && s[k] <= 'z')) {
					for k < len(s) && wordByte(s[k]) {
						k++
					}
					i = k
					continue
				}
			}
			out = append(out, s[i:j]...)
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	return string(out)
}

func wordByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
