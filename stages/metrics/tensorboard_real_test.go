package metrics

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTensorBoardRealWriters reads event files written by three real
// writers and compares every scalar with what an independent decoder found
// in them: TF2 Keras (tensor-encoded scalars among histogram and graph
// tensors), PyTorch SummaryWriter (simple_value, steps written twice by a
// restarted run) and CatBoost (no file_version record).
func TestTensorBoardRealWriters(t *testing.T) {
	for _, name := range []string{"keras-tf2", "pytorch-summarywriter", "catboost"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "tensorboard", name)
			b, err := os.ReadFile(filepath.Join(dir, "expected-scalars.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				File    string `json:"file"`
				Records int64  `json:"records"`
				Scalars []struct {
					Tag  string `json:"tag"`
					Step int64  `json:"step"`
					Bits string `json:"bits"`
				} `json:"scalars"`
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if len(want.Scalars) == 0 {
				t.Fatal("no expected scalars")
			}
			var wantPts []Point
			for _, s := range want.Scalars {
				bits, err := strconv.ParseUint(s.Bits, 16, 32)
				if err != nil {
					t.Fatalf("bits %q: %v", s.Bits, err)
				}
				wantPts = append(wantPts, Point{Step: s.Step, Key: s.Tag, Value: float64(math.Float32frombits(uint32(bits)))})
			}
			got, st, err := ParseFile(filepath.Join(dir, want.File), Options{Format: FormatTensorBoard})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantPts, got); diff != "" {
				t.Errorf("scalars differ from the independent decoder (-want +got):\n%s", diff)
			}
			if st.PendingBytes != 0 {
				t.Errorf("%d bytes left unparsed in a complete file", st.PendingBytes)
			}
		})
	}
}
