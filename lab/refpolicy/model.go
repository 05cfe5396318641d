package refpolicy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rlgate/rlgate/manifests"
)

// Dim is the hashed feature dimension of every slot's weight vector.
const Dim = 1 << 14

// WeightsFile is the file a checkpoint directory holds.
const WeightsFile = "model.safetensors"

// Format names the checkpoint layout, stored in the safetensors metadata.
const Format = "rlgate.refpolicy/1"

// dtypeF32 is the element type of every weight tensor.
const dtypeF32 = manifests.DType("F32")

// Slot is one decision of the SQL sketch.
type Slot int

// The slots, in the order the policy fills them.
const (
	SlotTable   Slot = iota // FROM table
	SlotSelect              // the selected (aggregation, column)
	SlotSelect2             // a second selected column, or none
	SlotWhere               // one condition (column, operator, value), or none
	SlotGroup               // GROUP BY column (also selected first), or none
	SlotOrder               // ORDER BY column or count(*), direction, or none
	SlotLimit               // LIMIT 1 or a number from the question, or none
	numSlots
)

var slotNames = [numSlots]string{"table", "select", "select2", "where", "group", "order", "limit"}

func (s Slot) String() string { return slotNames[s] }

// TensorName is the name of slot s's weight tensor: slot.<name>.w.
func (s Slot) TensorName() string { return "slot." + slotNames[s] + ".w" }

// Weights are the policy's parameters: one f32 vector of Dim hashed
// feature weights per slot.
type Weights [numSlots][]float32

// NewWeights returns all-zero weights.
func NewWeights() *Weights {
	var w Weights
	for s := range w {
		w[s] = make([]float32, Dim)
	}
	return &w
}

// Clone returns a deep copy.
func (w *Weights) Clone() *Weights {
	c := NewWeights()
	for s := range w {
		copy(c[s], w[s])
	}
	return c
}

// Save writes w as dir/model.safetensors (dir is created), one tensor per
// slot in slot order, through the project's safetensors writer, so that
// rlgate ckpt digest, manifests and the weights audit read it like any
// checkpoint. The same weights always give the same bytes.
func (w *Weights) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	var src []manifests.TensorSource
	for s := range numSlots {
		b := make([]byte, 4*Dim)
		for i, v := range w[s] {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		src = append(src, manifests.TensorSource{Name: s.TensorName(), DType: dtypeF32, Shape: []int64{Dim}, Data: bytes.NewReader(b)})
	}
	var buf bytes.Buffer
	meta := map[string]string{"format": Format, "dim": strconv.Itoa(Dim)}
	if err := manifests.WriteSafetensors(&buf, meta, src); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	path := filepath.Join(dir, WeightsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// ErrCheckpoint is returned when a checkpoint is not a reference-policy
// checkpoint.
var ErrCheckpoint = errors.New("not a reference-policy checkpoint")

// Load reads the weights of a checkpoint directory written by Save (or a
// .safetensors file): every slot tensor must be there, f32 of shape [Dim].
func Load(path string) (*Weights, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, WeightsFile)
	}
	f, err := manifests.OpenSafetensors(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load checkpoint: %w. Try: rlgate train init --out DIR for a Base checkpoint", err)
	}
	if err != nil {
		return nil, fmt.Errorf("load checkpoint: %w", err)
	}
	defer f.Close()
	byName := map[string]manifests.TensorInfo{}
	for _, t := range f.Tensors {
		byName[t.Name] = t
	}
	w := NewWeights()
	for s := range numSlots {
		t, ok := byName[s.TensorName()]
		if !ok || t.DType != dtypeF32 || len(t.Shape) != 1 || t.Shape[0] != Dim {
			return nil, fmt.Errorf("load checkpoint %s: %w: want tensor %s, f32 of shape [%d]. Try: rlgate train init --out DIR", path, ErrCheckpoint, s.TensorName(), Dim)
		}
		b, err := io.ReadAll(f.TensorReader(t))
		if err != nil {
			return nil, fmt.Errorf("load checkpoint %s: tensor %s: %w", path, t.Name, err)
		}
		for i := range w[s] {
			w[s][i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return w, nil
}
