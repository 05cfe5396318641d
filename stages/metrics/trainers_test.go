package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const trainerLogs = "../../testdata/trainer-logs/"

// expectedPoints reads the points gen_logs.py says a fixture holds, taken
// from the trainer's dicts before they were formatted.
func expectedPoints(t *testing.T, name string) []Point {
	t.Helper()
	raw, err := os.ReadFile(trainerLogs + name)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][3]any
	if err := json.Unmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	pts := make([]Point, len(rows))
	for i, r := range rows {
		pts[i] = Point{Step: int64(r[0].(float64)), Key: r[1].(string), Value: r[2].(float64)}
	}
	return pts
}

// TestTrainerLogFormats parses each trainer's log, named and detected, to
// the points its writer logged.
func TestTrainerLogFormats(t *testing.T) {
	// The real LLaMA-Factory sample (2023): nulls and strings are skipped;
	// its last line logged no loss and no learning rate.
	var issue774 []Point
	for _, r := range []struct {
		step      int64
		loss, lr  float64
		epoch, pc float64
	}{
		{3200, 4.4671, 1.4439610072863874e-08, 0.99, 98.92},
		{3210, 4.4577, 7.367495402210711e-09, 0.99, 99.23},
		{3220, 4.4458, 2.6523817248214068e-09, 1.0, 99.54},
		{3230, 4.4598, 2.9471371284783834e-10, 1.0, 99.85},
	} {
		issue774 = append(issue774, Point{r.step, "total_steps", 3235}, Point{r.step, "loss", r.loss},
			Point{r.step, "learning_rate", r.lr}, Point{r.step, "epoch", r.epoch}, Point{r.step, "percentage", r.pc})
	}
	issue774 = append(issue774, Point{3235, "total_steps", 3235}, Point{3235, "epoch", 1}, Point{3235, "percentage", 100})

	tests := []struct {
		file    string
		format  Format
		want    []Point
		records int64
		skipped int64
		ignored int64
	}{
		{"llamafactory-issue774-trainer_log.jsonl", FormatLlamaFactory, issue774, 5, 5*4 + 7, 0},
		{"llamafactory-trainer_log.jsonl", FormatLlamaFactory, expectedPoints(t, "llamafactory-trainer_log.expected.json"), 4, 4 * 2, 0},
		// Ray's "Started a local Ray instance." is the one other line.
		// Both steps' learning rate, 1e-6, is shown as '0.0000' and skipped.
		{"skyrl-console.log", FormatSkyRLConsole, expectedPoints(t, "skyrl-console.expected.json"), 2, 2, 1},
		// The two "Sample: [...]" lines are ignored.
		{"openrlhf-console.log", FormatOpenRLHFConsole, expectedPoints(t, "openrlhf-console.expected.json"), 2, 0, 2},
	}
	for _, tt := range tests {
		for _, named := range []Format{tt.format, FormatAuto} {
			t.Run(tt.file+":"+string(named), func(t *testing.T) {
				tl, err := NewTailer(trainerLogs+tt.file, Options{Format: named}, Cursor{})
				if err != nil {
					t.Fatal(err)
				}
				if tl.Format() != tt.format {
					t.Fatalf("read as %s, want %s", tl.Format(), tt.format)
				}
				got, err := tl.Final()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("points (-want +got):\n%s", diff)
				}
				st := tl.Stats()
				if st.Records != tt.records || st.Skipped != tt.skipped || st.Ignored != tt.ignored || st.Duplicates != 0 {
					t.Errorf("stats %+v; want %d records, %d skipped, %d ignored", st, tt.records, tt.skipped, tt.ignored)
				}
			})
		}
	}
}

// TestDetectTrainerFormats: Detect picks each console format, and a file
// that reads as two formats or as none is an error naming the file and the
// lines behind the verdict.
func TestDetectTrainerFormats(t *testing.T) {
	skyrlHeader := "2026-08-21 18:11:02.125 | INFO     | skyrl.train.utils.tracking:log:189 - Step 1: \n{'a': '0.5000'}\n"
	tests := []struct {
		name, file, content string
		want                Format
		err                 error
		msg                 string // in the error, after the file's path
	}{
		{"llamafactory by name", "trainer_log.jsonl", "", FormatLlamaFactory, nil, ""},
		{"llamafactory by content", "log.jsonl", `{"current_steps": 10, "loss": 1}` + "\n", FormatLlamaFactory, nil, ""},
		{"skyrl console", "train.log", "Loading\n" + skyrlHeader, FormatSkyRLConsole, nil, ""},
		{"skyrl header alone", "train.log", "Step 12:\n", FormatSkyRLConsole, nil, ""},
		{"openrlhf console", "train.log", "INFO 08-13 19:21:41 ppo_trainer_async.py:244] Global step 4: {'kl': 0.1}\n", FormatOpenRLHFConsole, nil, ""},
		{"two console formats", "train.log", "step:1 - a:1\n" + skyrlHeader, "", ErrAmbiguousFormat,
			"ambiguous metrics format: it reads as line 1 as verl-console and line 2 as skyrl-console"},
		{"current_steps and step", "log.jsonl", `{"current_steps": 1, "step": 1}` + "\n", "", ErrAmbiguousFormat,
			"line 1: ambiguous metrics format: the first line has both current_steps"},
		{"json without a step", "log.jsonl", "\n" + `{"loss": 1}` + "\n", "", ErrUnknownFormat,
			"line 2: unknown metrics format: the first line is a JSON object with neither step nor current_steps"},
		{"no step records", "train.log", "Loading\nStep one: done\n", "", ErrUnknownFormat,
			"unknown metrics format: none of its first 3 lines is a step record of verl-console, skyrl-console, openrlhf-console"},
		{"empty", "train.log", "", "", ErrUnknownFormat, "unknown metrics format: the file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.content))
			got, err := Detect(path)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("Detect = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
			if err != nil && !strings.Contains(err.Error(), "detect metrics format of "+path+": "+tt.msg) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.msg)
			}
		})
	}
}

// TestSkyRLRecordHeldUntilDictCloses: a step whose dict is still being
// written is held back, and the cursor waits at its header.
func TestSkyRLRecordHeldUntilDictCloses(t *testing.T) {
	full, err := os.ReadFile(trainerLogs + "skyrl-console.log")
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(full), "'policy/policy_kl': '0.0018'")
	path := writeTemp(t, "skyrl.log", full[:cut])
	tl, err := NewTailer(path, Options{Format: FormatSkyRLConsole}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tl.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := expectedPoints(t, "skyrl-console.expected.json")
	step2 := slices.IndexFunc(want, func(p Point) bool { return p.Step == 2 })
	if diff := cmp.Diff(want[:step2], first); diff != "" {
		t.Fatalf("first read (-want +got):\n%s", diff)
	}
	header := strings.LastIndex(string(full[:cut]), "(skyrl_entrypoint pid=2231) \x1b[32m")
	if c := tl.Cursor(); c.Offset != int64(header) || c.Records != 1 {
		t.Errorf("cursor %+v, want offset %d (step 2's header), 1 record", c, header)
	}
	// A restarted reader resumes from the cursor and reads step 2 whole.
	if err := os.WriteFile(path, full, 0o644); err != nil {
		t.Fatal(err)
	}
	resumed, err := NewTailer(path, Options{Format: FormatSkyRLConsole}, tl.Cursor())
	if err != nil {
		t.Fatal(err)
	}
	rest, err := resumed.Next()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[step2:], rest); diff != "" {
		t.Errorf("after the dict closed (-want +got):\n%s", diff)
	}
}

// TestPyDictValues covers the values a Python repr or pprint writes.
func TestPyDictValues(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Point
		skipped    int64
	}{
		{"numbers and reprs", `{'a': 1, 'b': -2.5e-07, 'c': np.int64(5), 'd': tensor(0.5, device='cuda:0'), 'e': nan}`,
			[]Point{{7, "a", 1}, {7, "b", -2.5e-07}, {7, "c", 5}, {7, "d", 0.5}, {7, "e", math.NaN()}}, 0},
		{"strings holding numbers", `{'a': '0.1234', 'b': ('0.5'
 '000'), 'c': 'abc'}`, []Point{{7, "a", 0.1234}, {7, "b", 0.5}}, 1},
		{"nested dicts flatten", `{'eval': {'spider': {'acc': '0.5000'}}, 'x': 2}`,
			[]Point{{7, "eval/spider/acc", 0.5}, {7, "x", 2}}, 0},
		{"not numbers", `{'a': None, 'b': True, 'c': [1, 2], 'd': (1, {'e': 2}), 'f': 3}`, []Point{{7, "f", 3}}, 4},
		{"quotes in keys", `{"it's": 1, 'say "hi"': 2, 'back\\slash': 3}`,
			[]Point{{7, "it's", 1}, {7, `say "hi"`, 2}, {7, `back\slash`, 3}}, 0},
		{"cut short keeps complete items", `{'a': 1, 'b': 2.25, 'c': 0.12`, []Point{{7, "a", 1}, {7, "b", 2.25}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sk sink
			var p pyDict
			sk.begin()
			p.read(&sk, []byte(tt.text))
			sk.commit(7)
			if diff := cmp.Diff(tt.want, sk.out, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("points (-want +got):\n%s", diff)
			}
			if sk.stats.Skipped != tt.skipped {
				t.Errorf("skipped %d, want %d", sk.stats.Skipped, tt.skipped)
			}
		})
	}
}

// FuzzPyDict: any input parses without panicking, and the points of a
// dict that closed do not change when text follows it.
func FuzzPyDict(f *testing.F) {
	f.Add(`{'a': '0.1234', 'b': {'c': np.int64(3)}, 'd': (1, 2)}`)
	f.Add(`{'a': ('x'` + "\n" + ` 'y'), "b\"": tensor(1.0, device='cuda:0')}`)
	f.Fuzz(func(t *testing.T, text string) {
		var a, b sink
		var p pyDict
		a.begin()
		closed := p.read(&a, []byte(text))
		if !closed {
			return
		}
		b.begin()
		p.read(&b, []byte(text+", 'z': 1}"))
		if !cmp.Equal(a.out, b.out, cmpopts.EquateNaNs()) {
			t.Errorf("points changed with trailing text:\n%v\n%v", a.out, b.out)
		}
	})
}

// TestSkyRLBadDict: a dict whose braces balance but which does not parse
// is an error naming the file and line; the steps before it are kept.
func TestSkyRLBadDict(t *testing.T) {
	path := writeTemp(t, "skyrl.log", []byte("Step 1: \n{'a': 1}\nStep 2: \n{'a': 1 'b': 2}\n"))
	pts, _, err := ParseFile(path, Options{Format: FormatSkyRLConsole})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 4 || !strings.Contains(err.Error(), path+":4: the metrics dict of step 2, from line 4, does not parse") {
		t.Fatalf("err = %v", err)
	}
	if diff := cmp.Diff([]Point{{1, "a", 1}}, pts); diff != "" {
		t.Errorf("points before the fault (-want +got):\n%s", diff)
	}
}

// TestSkyRLRoundedLearningRate: a learning rate the console shows as
// '0.0000' is skipped, not recorded as 0; any other value shown so is kept,
// and a learning rate the four decimals can show is kept.
func TestSkyRLRoundedLearningRate(t *testing.T) {
	path := writeTemp(t, "skyrl.log", []byte("Step 1: \n{'policy/policy_kl': '0.0000', 'policy/policy_lr': '0.0000', 'reward/avg_raw_reward': '0.0000'}\n"+
		"Step 2: \n{'policy/policy_lr': '0.0001'}\n"))
	pts, st, err := ParseFile(path, Options{Format: FormatSkyRLConsole})
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{1, "policy/policy_kl", 0}, {1, "reward/avg_raw_reward", 0}, {2, "policy/policy_lr", 0.0001}}
	if diff := cmp.Diff(want, pts); diff != "" || st.Skipped != 1 {
		t.Errorf("points (-want +got):\n%s\nskipped %d, want 1", diff, st.Skipped)
	}
}
