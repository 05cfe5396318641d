package gpu

import "errors"

// ErrNoGPU is returned by Inventory when nvidia-smi is not on PATH or lists
// no device: the machine has no GPU rlgate can see, which a CPU-only stage
// may well expect.
var ErrNoGPU = errors.New("no GPU seen")

// ErrBadOutput is returned when nvidia-smi prints something other than the
// CSV rows that were asked for.
var ErrBadOutput = errors.New("unexpected nvidia-smi output")
