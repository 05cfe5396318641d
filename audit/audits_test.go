package audit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
)

func TestGoldMatcher(t *testing.T) {
	gold := `SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id WHERE T2.year = "2014"`
	tests := []struct {
		name, text, match string
	}{
		{"verbatim", "Question: who sang? " + gold, "gold"},
		{"case, spacing and quoting", "select t1.name\n  from singer as t1 join concert as t2\n on t1.singer_id = t2.singer_id where t2.year = '2014'", "gold"},
		{"other aliases", "SELECT a.name FROM singer AS a JOIN concert AS b ON a.singer_id = b.singer_id WHERE b.year = 2014", "gold"},
		{"a long fragment", "hint: join concert on singer_id = singer_id where year", "fragment"},
		{"the schema alone", "CREATE TABLE singer (singer_id int, name text); CREATE TABLE concert (singer_id int, year text)", ""},
		{"another query", "SELECT count(*) FROM singer", ""},
	}
	m := newGoldMatcher(gold, DefaultGoldSubstring)
	for _, tc := range tests {
		if got, frag := m.find(tc.text); got != tc.match {
			t.Errorf("%s: match %q (%q), want %q", tc.name, got, frag, tc.match)
		}
	}
	// A gold too short to tell from innocent text is not looked for.
	if got, _ := newGoldMatcher("SELECT 1", DefaultGoldSubstring).find("SELECT 1"); got != "" {
		t.Errorf("short gold matched: %q", got)
	}
}

func TestSharedQuestions(t *testing.T) {
	train := []tasks.Task{
		{ID: "t1", Question: "How many singers do we have?"},
		{ID: "t2", Question: "List the name, country and age of all singers ordered by age from the oldest to the youngest."},
		{ID: "t3", Question: "What is the average age of all dogs?"},
	}
	eval := []tasks.Task{
		{ID: "e1", Question: "how many singers do we have"}, // exact once normalised
		// The last of 18 words changed: 17 bigrams each, 16 shared, 18 in
		// the union: Jaccard 16/18 = 0.89, below 0.9.
		{ID: "e2", Question: "List the name, country and age of all singers ordered by age from the oldest to the newest."},
		// One word added at the end: 17 of 18 bigrams shared, 0.944.
		{ID: "e3", Question: "List the name, country and age of all singers ordered by age from the oldest to the youngest one."},
		{ID: "e4", Question: "Which dogs are older than 5?"},
	}
	got := sharedQuestions(train, eval, DefaultNearDuplicate)
	want := []SplitOverlap{{Train: "t1", Eval: "e1", Score: 1}, {Train: "t2", Eval: "e3", Score: 17.0 / 18}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shared questions (-want +got):\n%s", diff)
	}
	if got := sharedQuestions(train, eval[1:2], 0.85); len(got) != 1 || got[0].Score != 16.0/18 {
		t.Errorf("at 0.85: %+v, want e2 at 16/18", got)
	}
}

func TestLoadPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := "claims: [\"rl > base\", \"rl>noupdate\"]\naudits: [gold, budget]\nseed: 0\noptions: {max_kl_growth: 4, split_by_database: true}\nruns: {rl: ev-rl, base: ev-base}\ntrain:\n  rl: train-rl\n"
	p, err := LoadPolicy(write("ok.yaml", src))
	if err != nil {
		t.Fatal(err)
	}
	want := PaperGrade()
	want.Name = filepath.Join(dir, "ok.yaml")
	want.Claims = []Claim{{Better: "rl", Than: "base"}, {Better: "rl", Than: "noupdate"}}
	want.Audits = []string{AuditGold, AuditBudget}
	want.Seed = 0
	want.Options = Options{MaxKLGrowth: 4, SplitByDatabase: true}
	want.Subjects = Subjects{Runs: []LabeledRun{{"rl", "ev-rl"}, {"base", "ev-base"}}, Train: []LabeledRun{{"rl", "train-rl"}}}
	want.Source = []byte(src)
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
	for name, text := range map[string]string{
		"unknown-field.yaml": "claims: [\"rl > base\"]\nthreshold: 1\n",
		"bad-claim.yaml":     "claims: [\"rl >> base\"]\n",
		"bad-audit.yaml":     "audits: [weights]\n",
		"bad-alpha.yaml":     "alpha: 2\n",
		"bad-runs.yaml":      "runs: [ev-rl]\n",
		"bad-label.yaml":     "runs: {\"rl\\e[2J\": ev-rl, base: ev-base}\n", // YAML's \e is ESC
	} {
		if _, err := LoadPolicy(write(name, text)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
}

func TestVerdictJUnit(t *testing.T) {
	// One check per model and two findings of one model: a CI reporter
	// keys cases by class and name, so none of them may share both.
	v := &Verdict{Policy: PaperGrade(), Failed: 2, Checks: []GateCheck{
		{Name: "audit gold: no-gold-in-prompts", OK: true, Message: "base: no gold in the 40 messages"},
		{Name: "audit gold: no-gold-in-prompts", OK: false, Message: "rl: task spider-dev-0007 leaked", Seqs: []int64{41, 90}},
		{Name: "audit gold: no-gold-in-prompts", OK: false, Message: "rl: task spider-dev-0009 leaked"},
		{Name: "audit budget: same-protocol", OK: true, Message: "every evaluation used protocol p"},
		{Name: "claim rl > base", OK: true, Message: "Δ +0.1"},
	}}
	var b bytes.Buffer
	if err := v.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	type jcase struct {
		Name      string `xml:"name,attr"`
		Classname string `xml:"classname,attr"`
		Failure   *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    struct {
			Cases []jcase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	cs := got.Suite.Cases
	if got.Tests != 5 || got.Failures != 2 || len(cs) != 5 || cs[1].Failure == nil || cs[0].Failure != nil ||
		!strings.Contains(cs[1].Failure.Text, "[41 90]") {
		t.Fatalf("junit:\n%s", b.String())
	}
	var names [][2]string
	for _, c := range cs {
		names = append(names, [2]string{c.Classname, c.Name})
	}
	want := [][2]string{
		{"rlgate.gate.audit.gold.base", "audit gold: no-gold-in-prompts (base)"},
		{"rlgate.gate.audit.gold.rl", "audit gold: no-gold-in-prompts (rl)"},
		{"rlgate.gate.audit.gold.rl", "audit gold: no-gold-in-prompts (rl) #2"},
		{"rlgate.gate.audit.budget", "audit budget: same-protocol"},
		{"rlgate.gate.claim", "claim rl > base"},
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("junit class and name (-want +got):\n%s", diff)
	}
}

func TestScanEpisodeLine(t *testing.T) {
	req := func(msgs ...rollout.Message) rollout.Body {
		b, err := json.Marshal(rollout.ChatRequest{Model: "m", Messages: msgs, MaxTokens: 10, N: 1, User: "spider-dev-0001#2"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sys, user := rollout.Message{Role: "system", Content: "You are \"careful\"."}, rollout.Message{Role: "user", Content: "Question:\nHow many?"}
	reply, obs := rollout.Message{Role: "assistant", Content: "<sql>SELECT 1</sql>"}, rollout.Message{Role: "user", Content: "<observation>\n1\n</observation>"}
	ep := rollout.Episode{TaskID: "spider-dev-0001", Sample: 2, StopReason: rollout.StopSolution, Turns: []rollout.Turn{
		{Index: 0, Request: req(sys, user), Response: rollout.Body(`{"choices":[{"message":{"content":"\"request\":\"x\""}}]}`), SQLStatus: "timeout"},
		{Index: 1, Request: req(sys, user, reply, obs)},
	}}
	line, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	ref := rollout.Recorded{EpisodeRef: rollout.EpisodeRef{TaskID: ep.TaskID, Sample: ep.Sample}}
	tokens, statuses, ok := scanEpisodeLine(line, ref, nil, nil)
	var requests [][]byte
	for _, tok := range tokens {
		var body string
		if err := json.Unmarshal(tok, &body); err != nil {
			t.Fatal(err)
		}
		requests = append(requests, []byte(body))
	}
	want := [][]byte{ep.Turns[0].Request, ep.Turns[1].Request}
	if !ok || !cmp.Equal(want, requests) || !cmp.Equal([]string{"timeout", ""}, statuses) {
		t.Errorf("scan: ok %v, statuses %q, requests (-want +got):\n%s", ok, statuses, cmp.Diff(want, requests))
	}
	for _, c := range []struct {
		a, b [][]byte
		end  []byte
	}{{requests, requests, messagesEnd}, {tokens, tokens, quotedMessagesEnd}} {
		if !messagesPrefix(c.a[0], c.b[1], c.end) || messagesPrefix(c.a[1], c.b[0], c.end) {
			t.Errorf("with %s: the first request's messages open the second's, not the other way", c.end)
		}
	}
	if diff := cmp.Diff([]rollout.Message{sys, user, obs}, policyMessages(requests[1])); diff != "" {
		t.Errorf("policy messages (-want +got):\n%s", diff)
	}
	// A body that is not UTF-8 is written as base64: the line is decoded whole.
	ep.Turns[1].Request = rollout.Body("\xff\xfe")
	line, _ = json.Marshal(ep)
	if _, _, ok := scanEpisodeLine(line, ref, nil, nil); ok {
		t.Error("a base64 body was scanned as a string")
	}
	if _, _, ok := scanEpisodeLine(line, rollout.Recorded{EpisodeRef: rollout.EpisodeRef{TaskID: "other", Sample: 2}}, nil, nil); ok {
		t.Error("a line of another episode was accepted")
	}
}

// TestScanSharedOpening scans two samples of a task that open with the
// same prompt: the second is read from what follows the opening, and both
// samples are still named on every message they were sent.
func TestScanSharedOpening(t *testing.T) {
	sys, user := rollout.Message{Role: "system", Content: "Answer in SQL.\n"}, rollout.Message{Role: "user", Content: "Question: \"how many\"?"}
	var blob []byte
	var refs []rollout.Recorded
	for sample := range 2 {
		reply := rollout.Message{Role: "assistant", Content: fmt.Sprintf("<sql>SELECT %d</sql>", sample)}
		obs := rollout.Message{Role: "user", Content: fmt.Sprintf("<observation>%d</observation>", sample)}
		var turns []rollout.Turn
		for _, msgs := range [][]rollout.Message{{sys, user}, {sys, user, reply, obs}} {
			b, err := json.Marshal(rollout.ChatRequest{Model: "m", Messages: msgs, N: 1, User: fmt.Sprintf("t#%d", sample)})
			if err != nil {
				t.Fatal(err)
			}
			turns = append(turns, rollout.Turn{Request: b})
		}
		line, err := json.Marshal(rollout.Episode{TaskID: "t", Sample: sample, Turns: turns})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, rollout.Recorded{EpisodeRef: rollout.EpisodeRef{TaskID: "t", Sample: sample, Offset: int64(len(blob)), Length: int64(len(line))}, Seq: int64(10 + sample)})
		blob = append(append(blob, line...), '\n')
	}
	s := &rolloutScan{Tasks: map[string]*taskMessages{}}
	for _, r := range refs {
		if err := s.add(blob, r); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		Role, Content string
		Samples       []int
		Seqs          []int64
	}
	var got []seen
	for _, m := range s.Tasks["t"].Messages {
		got = append(got, seen{m.Role, m.Content, m.Samples, m.Seqs})
	}
	want := []seen{
		{"system", sys.Content, []int{0, 1}, []int64{10, 11}},
		{"user", user.Content, []int{0, 1}, []int64{10, 11}},
		{"user", "<observation>0</observation>", []int{0}, []int64{10}},
		{"user", "<observation>1</observation>", []int{1}, []int64{11}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if s.Tasks["t"].opening == nil {
		t.Error("the task's opening was not kept, so the second sample was decoded whole")
	}
}

func TestJSONStringToken(t *testing.T) {
	for _, s := range []string{``, `a`, `a\"b`, `a\\`, `a\\\"b\\`, `\u0022`, `ends in \\\\`} {
		tok, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		in := append(append([]byte{}, tok...), `,"next":"x"}`...)
		got, n := jsonStringToken(in)
		if string(got) != string(tok) || n != len(tok) {
			t.Errorf("%q: token %q (%d), want %q", s, got, n, tok)
		}
	}
	for _, bad := range []string{``, `x"a"`, `"unterminated`, `"escaped end\"`} {
		if _, n := jsonStringToken([]byte(bad)); n != 0 {
			t.Errorf("%q: read a token", bad)
		}
	}
}
