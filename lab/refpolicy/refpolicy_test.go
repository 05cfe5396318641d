package refpolicy

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/sqlenv"
	"github.com/rlgate/rlgate/stages/tasks"
)

const spiderDB = "../../testdata/spider/database/"

// renderedPrompt renders the prompt of a question on a real database, as
// an import and a rollout render it.
func renderedPrompt(t *testing.T, db, question string) Prompt {
	t.Helper()
	ex := sqlenv.NewExecutor(sqlenv.Options{})
	defer ex.Close()
	schema, err := dataset.RenderSchema(context.Background(), ex, spiderDB+db+"/"+db+".sqlite")
	if err != nil {
		t.Fatal(err)
	}
	proto := rollout.DefaultProtocol()
	return ParsePrompt(proto.UserPrompt(&tasks.Task{ID: "t", DBID: db, Question: question, Schema: schema}))
}

// TestParsePromptFindsTheDatabase compares what the policy reads from a
// rendered prompt with what SQLite itself says of the database.
func TestParsePromptFindsTheDatabase(t *testing.T) {
	for _, db := range []string{"concert_singer", "car_1", "world_1", "cre_Doc_Template_Mgt"} {
		t.Run(db, func(t *testing.T) {
			p := renderedPrompt(t, db, "How many singers do we have?")
			ex := sqlenv.NewExecutor(sqlenv.Options{})
			defer ex.Close()
			path := spiderDB + db + "/" + db + ".sqlite"
			want := map[string][]string{}
			res, err := ex.Execute(context.Background(), path, "SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.rowid, c.cid")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Rows {
				want[r[0].String()] = append(want[r[0].String()], r[1].String())
			}
			got := map[string][]string{}
			for _, tb := range p.Tables {
				for _, c := range tb.Columns {
					got[tb.Name] = append(got[tb.Name], c.Name)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("tables and columns (-sqlite +parsed):\n%s", d)
			}
			if p.Question != "How many singers do we have?" {
				t.Errorf("question %q", p.Question)
			}
		})
	}
}

// TestMatchFindsEveryRenderedChoice: SFT's target search must find the
// choice behind any SQL the policy renders.
func TestMatchFindsEveryRenderedChoice(t *testing.T) {
	p := renderedPrompt(t, "pets_1", "What is the average weight of dogs older than 3 per pet type?")
	sit := NewSituation(&p, "")
	rng := rand.New(rand.NewPCG(1, 2))
	pol := &Model{W: NewWeights()}
	for range 300 {
		c := pol.sample(sit.sk, rng, 1)
		q := sit.Render(c)
		tg, ok := sit.Match(" " + strings.ReplaceAll(q, " ", "  ") + ";")
		if !ok {
			t.Fatalf("Match(%q) found nothing", q)
		}
		u := sit.sk.used(c)
		for s := range numSlots {
			if u[s] && !slices.Contains(tg[s], c[s]) {
				t.Fatalf("Match(%q): slot %s targets %v, not the rendered %d", q, s, tg[s], c[s])
			}
		}
	}
	if _, ok := sit.Match("SELECT nothing FROM nowhere"); ok {
		t.Error("Match found a choice for SQL the policy cannot write")
	}
}

// TestGradientsMatchFiniteDifferences checks LogProb's, MarginalLogProb's
// and KL's analytic gradients against central differences of the values
// they return.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	p := renderedPrompt(t, "singer", "Show the names of singers whose net worth is more than 10 in descending order")
	sit := NewSituation(&p, "")
	w := Base(3)
	rng := rand.New(rand.NewPCG(4, 5))
	for s := range w {
		for i := range w[s] {
			w[s][i] += float32(rng.NormFloat64())
		}
	}
	pol, ref := &Model{W: w}, &Model{W: Base(9)}
	c := pol.sample(sit.sk, rng, 1)
	tg, _ := sit.Match(sit.Render(c))
	fns := map[string]func(g *Weights) float64{
		"logprob":  func(g *Weights) float64 { return pol.LogProb(sit, c, g, 1) },
		"marginal": func(g *Weights) float64 { return pol.MarginalLogProb(sit, tg, g, 1) },
		"kl":       func(g *Weights) float64 { return pol.KL(ref, sit, c, g, 1) },
	}
	for name, f := range fns {
		g := NewWeights()
		f(g)
		checked := 0
		for s := range numSlots {
			for _, k := range sit.sk.candidates(s, c[SlotTable])[c[s]].feats[:3] {
				const h = 1e-2
				old := w[s][k]
				w[s][k] = old + h
				up := f(nil)
				w[s][k] = old - h
				down := f(nil)
				w[s][k] = old
				num := (up - down) / (2 * h)
				if math.Abs(num-float64(g[s][k])) > 1e-3+1e-2*math.Abs(num) {
					t.Errorf("%s: slot %s feature %d: analytic %g, numeric %g", name, s, k, g[s][k], num)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("%s: no feature checked", name)
		}
	}
}

// TestReplyIsDeterministic: the same conversation and sampling give the
// same reply; greedy ignores the seed; sampling follows it.
func TestReplyIsDeterministic(t *testing.T) {
	p := renderedPrompt(t, "concert_singer", "What are the names of the singers from France?")
	proto := rollout.DefaultProtocol()
	msgs := []rollout.Message{{Role: "system", Content: proto.Prompt.System}, {Role: "user", Content: p.key}}
	pol := &Model{W: Base(1)}
	first := pol.Reply(msgs, Sampler{})
	if !strings.Contains(first, "<sql>") || !strings.Contains(first, "France") {
		t.Fatalf("first turn is not the value probe: %s", first)
	}
	if again := (&Model{W: Base(1)}).Reply(msgs, Sampler{Seed: 99}); again != first {
		t.Errorf("greedy reply changed with the seed:\n%s\n%s", first, again)
	}
	obs := "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: 'singer' | 'Country' | Country\nsinger | Country | France"
	msgs = append(msgs, rollout.Message{Role: "assistant", Content: first}, rollout.Message{Role: "user", Content: proto.ObservationMessage(obs, 5)})
	replies := map[string]bool{}
	for seed := range uint64(20) {
		s := Sampler{Temperature: 1, Seed: seed, Stream: StreamOf("t#0")}
		r := pol.Reply(msgs, s)
		if r2 := pol.Reply(msgs, s); r2 != r {
			t.Fatalf("seed %d: two replies differ:\n%s\n%s", seed, r, r2)
		}
		replies[r] = true
	}
	if len(replies) < 2 {
		t.Errorf("20 seeds at temperature 1 gave one reply: %v", replies)
	}
}

// TestReplyUsesObservations: a probed value becomes a condition, an
// empty check moves to the next candidate, a check with rows is answered.
func TestReplyUsesObservations(t *testing.T) {
	p := renderedPrompt(t, "concert_singer", "What are the names of the singers from France?")
	proto := rollout.DefaultProtocol()
	w := Base(1)
	w[SlotWhere][hashFeat("where:op==|value")] += 10
	pol := &Model{W: w}
	msgs := []rollout.Message{{Role: "system", Content: proto.Prompt.System}, {Role: "user", Content: p.key}}
	turn := func(reply, obs string, left int) string {
		t.Helper()
		msgs = append(msgs, rollout.Message{Role: "assistant", Content: reply}, rollout.Message{Role: "user", Content: proto.ObservationMessage(obs, left)})
		return pol.Reply(msgs, Sampler{})
	}
	probe := pol.Reply(msgs, Sampler{})
	check1 := turn(probe, "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: 'singer' | 'Country' | Country\nsinger | Country | France", 5)
	if !strings.Contains(check1, "<sql>") || !strings.Contains(check1, "WHERE Country = 'France'") {
		t.Fatalf("after the probe found France, the first check does not use it: %s", check1)
	}
	check2 := turn(check1, "STATUS: OK\nROW_COUNT: 0\nCOLUMNS: Name", 4)
	if !strings.Contains(check2, "<sql>") || check2 == check1 {
		t.Fatalf("after an empty result the policy did not try another candidate: %s", check2)
	}
	answer := turn(check2, "STATUS: OK\nROW_COUNT: 1\nCOLUMNS: Name\nJoe Sharp", 3)
	body := func(r string) string { tt, _ := sqlenv.ParseTurn(r); return tt.Body }
	if !strings.Contains(answer, "<solution>") || body(answer) != body(check2) {
		t.Fatalf("after a check with rows the policy did not answer with it: %s", answer)
	}
	msgs = msgs[:2]
	last := turn(probe, "STATUS: ERROR\nERROR: no such table", 1)
	if !strings.Contains(last, "<solution>") {
		t.Errorf("with one turn left the policy did not answer: %s", last)
	}
}

// TestPolicyCannotReachGold: the served policy is the policy side; its
// package never links gold or the grader (the trainer, train, does).
func TestPolicyCannotReachGold(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/rlgate/rlgate/lab/refpolicy").Output()
	if err != nil {
		t.Fatalf("go list -deps lab/refpolicy: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/rlgate/rlgate/stages/rollout") {
		t.Fatalf("go list -deps does not list stages/rollout; it printed:\n%s", out)
	}
	for _, dep := range deps {
		if strings.HasSuffix(dep, "/stages/gold") || strings.HasSuffix(dep, "/stages/grade") || strings.HasSuffix(dep, "/stages/dataset") {
			t.Errorf("lab/refpolicy depends on %s", dep)
		}
	}
}

// Every saved checkpoint's weights are indexed by hashFeat, so the
// featurizer's hashing of names in parts must give the bucket of the
// joined name, FNV-1a 32 as hash/fnv computes it.
func TestHashPartsIsFNVOfTheJoinedName(t *testing.T) {
	for _, parts := range [][]string{
		{},
		{"u:<bias>"},
		{"sel:agg=max", "|qc:", "oldest", "|", "age"},
		{"where:number|op=>", "|prev2:", "older", "_", "than"},
		{"qt:", "ünïcode", "|", "singer"},
	} {
		h := fnv.New32a()
		h.Write([]byte(strings.Join(parts, "")))
		want := int32(h.Sum32() & (Dim - 1))
		if got := hashParts(parts...); got != want {
			t.Errorf("hashParts(%q) = %d, FNV-1a of the joined name gives %d", parts, got, want)
		}
		if got := hashFeat(strings.Join(parts, "")); got != want {
			t.Errorf("hashFeat(%q) = %d, want %d", strings.Join(parts, ""), got, want)
		}
	}
}
