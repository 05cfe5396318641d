package metrics

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// parseConsole runs the console decoder over text as a finished file.
func parseConsole(t *testing.T, text string) ([]Point, Stats) {
	t.Helper()
	path := t.TempDir() + "/console.log"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	pts, st, err := ParseFile(path, Options{Format: FormatVerlConsole})
	if err != nil {
		t.Fatal(err)
	}
	return pts, st
}

func TestConsoleLines(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Point
		skip int64 // Stats.Skipped
		dup  int64 // Stats.Duplicates
		ign  int64 // Stats.Ignored
	}{
		{
			name: "plain",
			text: "step:3 - actor/lr:1e-06 - critic/score/mean:0.250\n",
			want: []Point{{3, "actor/lr", 1e-06}, {3, "critic/score/mean", 0.25}},
		},
		{
			name: "ray prefix and numpy reprs",
			text: "(TaskRunner pid=12345) step:7 - a:np.float64(0.123) - b:np.int64(5) - c:tensor(0.5, device='cuda:0')\n",
			want: []Point{{7, "a", 0.123}, {7, "b", 5}, {7, "c", 0.5}},
		},
		{
			name: "ansi colours and ray dedup suffix",
			text: "\x1b[36m(TaskRunner pid=1, ip=10.0.0.2)\x1b[0m step:2 - \x1b[1ma:1\x1b[0m [repeated 2x across cluster]\n",
			want: []Point{{2, "a", 1}},
		},
		{
			name: "non-finite values",
			text: "step:1 - loss:nan - up:inf - down:-inf - big:Infinity\n",
			want: []Point{{1, "loss", math.NaN()}, {1, "up", math.Inf(1)}, {1, "down", math.Inf(-1)}, {1, "big", math.Inf(1)}},
		},
		{
			name: "repeated key: the last write wins",
			text: "step:1 - k:0.000 - k:0.001 - j:2\n",
			want: []Point{{1, "k", 0.001}, {1, "j", 2}},
			dup:  1,
		},
		{
			// The fuzz finding: a \r-rewritten line repeats step and key.
			name: "carriage-return rewrite of a step: the last write wins",
			text: "step:0 -:0\rstep:0 -:1\n",
			want: []Point{{0, "-", 1}},
			dup:  1,
		},
		{
			name: "the same step on consecutive lines is one record",
			text: "step:4 - a:1 - b:1\nstep:4 - a:2\nstep:5 - a:3\n",
			want: []Point{{4, "a", 2}, {4, "b", 1}, {5, "a", 3}},
			dup:  1,
		},
		{
			name: "bools and bare words are skipped",
			text: "step:1 - done:True - flag:np.True_ - name:abc - orphan - x:1\n",
			want: []Point{{1, "x", 1}},
			skip: 4,
		},
		{
			name: "other lines ignored",
			text: "Training from scratch\nstep:0 - a:1\n\nINFO step:9 - a:2\nstepping:1\n",
			want: []Point{{0, "a", 1}},
			ign:  4,
		},
		{
			name: "continuation after trailing separator",
			text: "step:4 - a:1 -\nb:2 - c:3\n",
			want: []Point{{4, "a", 1}, {4, "b", 2}, {4, "c", 3}},
		},
		{
			name: "continuation with leading separator",
			text: "(TaskRunner pid=9) step:5 - a:1\n(TaskRunner pid=9) - b:2\nstep:6 - a:3\n",
			want: []Point{{5, "a", 1}, {5, "b", 2}, {6, "a", 3}},
		},
		{
			name: "carriage returns split a line",
			text: "step:1 - a:1\r 50%|#####     | 1/2\rstep:2 - a:2\r\n",
			want: []Point{{1, "a", 1}, {2, "a", 2}},
			ign:  1,
		},
		{
			name: "no newline at the end",
			text: "step:8 - a:1",
			want: []Point{{8, "a", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, st := parseConsole(t, tt.text)
			if !pointsEqual(pts, tt.want) {
				t.Errorf("points = %v, want %v", pts, tt.want)
			}
			if st.Skipped != tt.skip || st.Duplicates != tt.dup || st.Ignored != tt.ign {
				t.Errorf("skipped, duplicates, ignored = %d, %d, %d; want %d, %d, %d",
					st.Skipped, st.Duplicates, st.Ignored, tt.skip, tt.dup, tt.ign)
			}
		})
	}
}

// pointsEqual compares points, treating NaN as equal to NaN.
func pointsEqual(a, b []Point) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		same := a[i].Value == b[i].Value || math.IsNaN(a[i].Value) && math.IsNaN(b[i].Value)
		if a[i].Step != b[i].Step || a[i].Key != b[i].Key || !same {
			return false
		}
	}
	return true
}

func TestConsoleRealExcerpt(t *testing.T) {
	const path = "../../testdata/trainer-logs/verl-console-doc-excerpt.log"
	if f, err := Detect(path); err != nil || f != FormatVerlConsole {
		t.Fatalf("Detect = %q, %v; want verl-console", f, err)
	}
	pts, st, err := ParseFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 2 || st.Duplicates != 1 || st.Skipped != 0 || st.Ignored != 0 {
		t.Errorf("stats = %+v, want 2 records, 1 duplicate", st)
	}
	got := map[int64]map[string]float64{}
	for _, p := range pts {
		if got[p.Step] == nil {
			got[p.Step] = map[string]float64{}
		}
		got[p.Step][p.Key] = p.Value
	}
	checks := []struct {
		step int64
		key  string
		want float64
	}{
		{0, "critic/score/mean", 0.004},
		{0, "actor/lr(1e-4)", 0.010},
		{0, "critic/vpred_mean", -2.056},
		{0, "prompt_length/min", 68},
		// The example repeats this key where actor/reward_kl_penalty_coeff
		// belongs; the last write wins, as for every repeat, and counts as a
		// duplicate.
		{1, "actor/reward_kl_penalty", 0.001},
		{1, "critic/vf_clipfrac", 0.384},
	}
	for _, c := range checks {
		if v, ok := got[c.step][c.key]; !ok || v != c.want {
			t.Errorf("step %d %s = %v (present %v), want %v", c.step, c.key, v, ok, c.want)
		}
	}
	if n0, n1 := len(got[0]), len(got[1]); n0 != 40 || n1 != 39 {
		t.Errorf("keys per step = %d, %d; want 40, 39", n0, n1)
	}
}

// FuzzConsoleLine checks that any text parses without panicking, and that
// points it yields survive being printed the way veRL prints them and parsed
// again. testdata/fuzz/FuzzConsoleLine/carriage-return-rewrite is the
// finding that made a redrawn line one record.
func FuzzConsoleLine(f *testing.F) {
	excerpt, err := os.ReadFile("../../testdata/trainer-logs/verl-console-doc-excerpt.log")
	if err != nil {
		f.Fatal(err)
	}
	for line := range strings.SplitSeq(string(excerpt), "\n") {
		f.Add(line)
	}
	f.Add("(TaskRunner pid=1) step:3 - a:np.float64(nan) - b:inf -")
	f.Add("\x1b[31mstep:-1 - :5 - a: - b::1\r- c:2")
	f.Fuzz(func(t *testing.T, text string) {
		var d consoleDecoder
		var sk sink
		for line := range strings.SplitSeq(text, "\n") {
			d.line(&sk, []byte(line), Cursor{})
		}
		d.flush(&sk)
		if len(sk.out) == 0 {
			return
		}
		// One line per record: a new one where the step changes or a key
		// repeats (two records of one step, apart in the input). A blank
		// line between them keeps them apart, as a line that is not a step
		// line did in the input.
		var b strings.Builder
		var keys map[string]bool
		for i, p := range sk.out {
			if i == 0 || p.Step != sk.out[i-1].Step || keys[p.Key] {
				if i > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString("step:" + itoa(p.Step))
				keys = map[string]bool{}
			}
			keys[p.Key] = true
			b.WriteString(" - " + p.Key + ":" + ftoa(p.Value))
		}
		var d2 consoleDecoder
		var sk2 sink
		for l := range strings.SplitSeq(b.String(), "\n") {
			d2.line(&sk2, []byte(l), Cursor{})
		}
		d2.flush(&sk2)
		if !pointsEqual(sk.out, sk2.out) {
			t.Fatalf("reparse of %q:\n got %v\nwant %v", b.String(), sk2.out, sk.out)
		}
	})
}

func itoa(n int64) string   { return strconv.FormatInt(n, 10) }
func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
