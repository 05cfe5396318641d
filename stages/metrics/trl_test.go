package metrics

import (
	"errors"
	"math"
	"os"
	"testing"
)

const trlState = "../../testdata/trainer-logs/trl-grpo-trainer_state.json"

func TestTRLRealState(t *testing.T) {
	if f, err := Detect(trlState); err != nil || f != FormatTRL {
		t.Fatalf("Detect = %q, %v; want trl", f, err)
	}
	pts, st, err := ParseFile(trlState, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 200 log_history entries of 23 members, one of them "step".
	if st.Records != 200 || st.Points != 200*22 || len(pts) != 200*22 {
		t.Errorf("records %d, points %d (%d returned); want 200, 4400", st.Records, st.Points, len(pts))
	}
	first, last := pts[0], pts[len(pts)-1]
	if first.Step != 5 || last.Step != 1000 {
		t.Errorf("steps run %d..%d, want 5..1000", first.Step, last.Step)
	}
	for _, p := range pts {
		if p.Key == "step" {
			t.Fatalf("step kept as a key: %v", p)
		}
		if p.Step == 1000 && p.Key == "learning_rate" && p.Value != 3e-09 {
			t.Errorf("learning_rate at 1000 = %v, want 3e-09", p.Value)
		}
		if p.Step == 5 && p.Key == "reward" && p.Value != 0.3349999964237213 {
			t.Errorf("reward at 5 = %v, want 0.3349999964237213", p.Value)
		}
	}
}

// writeState writes a trainer_state.json and returns its path.
func writeState(t *testing.T, dir, text string) string {
	t.Helper()
	path := dir + "/trainer_state.json"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTRLGrowingDocument(t *testing.T) {
	dir := t.TempDir()
	v1 := `{"global_step": 2, "log_history": [{"loss": NaN, "step": 1}, {"loss": 0.5, "step": 2}], "x": 1}`
	v2 := `{"global_step": 3, "log_history": [{"loss": NaN, "step": 1}, {"loss": 0.5, "step": 2}, {"loss": 0.4, "step": 3}, {"train_runtime": 12.5, "step": 3}], "x": 1}`
	path := writeState(t, dir, v1)
	tl, err := NewTailer(path, Options{}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := tl.Next()
	if err != nil || len(pts) != 2 || !math.IsNaN(pts[0].Value) {
		t.Fatalf("first read = %v, %v; want NaN loss at 1 and 0.5 at 2", pts, err)
	}

	// The trainer is rewriting the file: a cut document yields the entries
	// complete so far, and no error until Final.
	writeState(t, dir, v2[:len(v2)-40])
	pts, err = tl.Next()
	if err != nil || len(pts) != 1 || pts[0].Step != 3 {
		t.Fatalf("read of a cut document = %v, %v; want the step-3 loss", pts, err)
	}
	if tl.Stats().PendingBytes == 0 {
		t.Error("a cut document reports no pending bytes")
	}
	cut := tl.Cursor()
	resumed, err := NewTailer(path, Options{}, cut)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Final(); !errors.Is(err, errJSONEnd) {
		t.Errorf("Final on a cut document = %v, want unexpected end", err)
	}

	writeState(t, dir, v2)
	pts, err = tl.Final()
	if err != nil || len(pts) != 1 || pts[0].Key != "train_runtime" {
		t.Fatalf("final read = %v, %v; want the train_runtime summary", pts, err)
	}
	if tl.Cursor().Records != 4 {
		t.Errorf("cursor = %+v, want 4 records", tl.Cursor())
	}

	writeState(t, dir, v1)
	if _, err := tl.Next(); !errors.Is(err, ErrRewound) {
		t.Errorf("read of a replaced document = %v, want ErrRewound", err)
	}
}

func TestTRLErrorsLocated(t *testing.T) {
	path := writeState(t, t.TempDir(), "{\n  \"log_history\": [\n    {\"loss\": 1, \"step\": 1},\n    {\"loss\": 2}\n  ]\n}\n")
	_, _, err := ParseFile(path, Options{})
	var pe *ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrNoStep) || pe.Line != 4 || pe.Column != 5 {
		t.Fatalf("err = %v, want ErrNoStep at 4:5", err)
	}
}
