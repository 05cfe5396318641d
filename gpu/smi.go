package gpu

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// smiCommand is looked up on PATH, so tests (and odd installations) can put
// their own first.
const smiCommand = "nvidia-smi"

// queryFields are asked for in this order; parseCSV reads them by position.
var queryFields = []string{
	"index", "uuid", "name", "driver_version", "memory.total",
	"memory.used", "utilization.gpu", "power.draw", "temperature.gpu",
}

// smiArgs is the one query both Inventory and Sampler run: CSV without a
// header or units, so that every field parses as written.
var smiArgs = []string{
	"--query-gpu=" + strings.Join(queryFields, ","),
	"--format=csv,noheader,nounits",
}

// Device is what identifies a GPU; it does not change while a stage runs.
type Device struct {
	Index          int      `json:"index"`
	UUID           string   `json:"uuid,omitempty"`
	Name           string   `json:"name,omitempty"`
	Driver         string   `json:"driver_version,omitempty"`
	MemoryTotalMiB *float64 `json:"memory_total_mib,omitempty"`
}

// Reading is one GPU's state at one sample. A value nvidia-smi reports as
// [N/A] or [Not Supported] is nil, never zero: a GPU whose power cannot be
// read did not draw 0 W.
type Reading struct {
	Device
	MemoryUsedMiB  *float64 `json:"memory_used_mib,omitempty"`
	UtilizationPct *float64 `json:"utilization_pct,omitempty"`
	PowerW         *float64 `json:"power_w,omitempty"`
	TemperatureC   *float64 `json:"temperature_c,omitempty"`
}

// ParseCSV reads the output of
//
//	nvidia-smi --query-gpu=index,uuid,name,driver_version,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu --format=csv,noheader,nounits
//
// one GPU per line. Blank lines are ignored; a line with the wrong number of
// fields or a value that is neither a number nor a bracketed placeholder
// ([N/A], [Not Supported], [Unknown Error], …) is an error naming the line.
func ParseCSV(out []byte) ([]Reading, error) {
	var rs []Reading
	for i, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		r, err := parseRow(line)
		if err != nil {
			return nil, fmt.Errorf("parse nvidia-smi output line %d %q: %w", i+1, line, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func parseRow(line string) (Reading, error) {
	f := strings.Split(line, ",")
	if len(f) != len(queryFields) {
		return Reading{}, fmt.Errorf("%w: %d fields, want %d", ErrBadOutput, len(f), len(queryFields))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	var r Reading
	var err error
	if r.Index, err = strconv.Atoi(f[0]); err != nil {
		return Reading{}, fmt.Errorf("%w: index %q", ErrBadOutput, f[0])
	}
	r.UUID, r.Name, r.Driver = text(f[1]), text(f[2]), text(f[3])
	nums := []**float64{&r.MemoryTotalMiB, &r.MemoryUsedMiB, &r.UtilizationPct, &r.PowerW, &r.TemperatureC}
	for j, dst := range nums {
		v := f[4+j]
		if absent(v) {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return Reading{}, fmt.Errorf("%w: %s %q", ErrBadOutput, queryFields[4+j], v)
		}
		*dst = &x
	}
	return r, nil
}

// absent reports whether nvidia-smi wrote a placeholder instead of a value.
func absent(v string) bool {
	return v == "" || v == "N/A" || strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]")
}

// text returns v, or "" for a placeholder.
func text(v string) string {
	if absent(v) {
		return ""
	}
	return v
}

// query runs nvidia-smi at path once. A failing run's error carries the
// first line nvidia-smi printed, which says why ("couldn't communicate with
// the NVIDIA driver").
func query(ctx context.Context, path string, timeout time.Duration) ([]Reading, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, smiArgs...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the pipes open after being killed must not hang us.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		why := firstLine(stderr.Bytes())
		if why == "" {
			why = firstLine(stdout.Bytes())
		}
		if why != "" {
			return nil, fmt.Errorf("run nvidia-smi: %w: %s", err, why)
		}
		return nil, fmt.Errorf("run nvidia-smi: %w", err)
	}
	return ParseCSV(stdout.Bytes())
}

// firstLine returns the first non-blank line of b, shortened for a message.
func firstLine(b []byte) string {
	for line := range strings.SplitSeq(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			return line
		}
	}
	return ""
}

// Inventory lists the GPUs nvidia-smi sees, for a stage's record of the
// machine it ran on. It returns ErrNoGPU when nvidia-smi is not on PATH or
// lists no device.
func Inventory(ctx context.Context) ([]Device, error) {
	path, err := exec.LookPath(smiCommand)
	if err != nil {
		return nil, fmt.Errorf("gpu inventory: %s not on PATH: %w", smiCommand, ErrNoGPU)
	}
	rs, err := query(ctx, path, defaultTimeout)
	if err != nil {
		return nil, fmt.Errorf("gpu inventory: %w", err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("gpu inventory: %s lists no device: %w", smiCommand, ErrNoGPU)
	}
	ds := make([]Device, len(rs))
	for i, r := range rs {
		ds[i] = r.Device
	}
	return ds, nil
}
