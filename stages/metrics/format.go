package metrics

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlgate/rlgate/ledger/untrusted"
)

// Format names a metrics file format as the CLI spells it after a colon:
// --metrics log.jsonl:verl.
type Format string

const (
	// FormatVerl is veRL's file logger: JSONL lines {"step": N, "data": {…}}.
	FormatVerl Format = "verl"
	// FormatVerlConsole is veRL's console logger: step:N - key:value - ….
	FormatVerlConsole Format = "verl-console"
	// FormatTRL is TRL's trainer_state.json with its log_history.
	FormatTRL Format = "trl"
	// FormatTensorBoard is a TensorBoard event file (SkyRL, PyTorch, TF).
	FormatTensorBoard Format = "tensorboard"
	// FormatJSONL is one JSON object per line with a step member.
	FormatJSONL Format = "jsonl"
	// FormatLlamaFactory is LLaMA-Factory's trainer_log.jsonl: one JSON
	// object per log call, its step under current_steps.
	FormatLlamaFactory Format = "llamafactory"
	// FormatSkyRLConsole is SkyRL's console logger: a "Step N: " log line
	// followed by the step's metrics as a pprint-formatted dict.
	FormatSkyRLConsole Format = "skyrl-console"
	// FormatOpenRLHFConsole is OpenRLHF's PPO trainer log line
	// "Global step N: {...}", the step's metrics as a Python dict repr.
	FormatOpenRLHFConsole Format = "openrlhf-console"
	// FormatWandB is a W&B run: its directory, its run-*.wandb record file
	// (the Python writer's and the Go core's) or the pre-0.10
	// wandb-history.jsonl.
	FormatWandB Format = "wandb"
	// FormatSwanLab is a SwanLab run: a 0.6 run directory or its
	// backup.swanlab record file, or a 0.3-0.5 run directory (logs/ beside
	// ../runs.swanlab).
	FormatSwanLab Format = "swanlab"
	// FormatMLflow is an MLflow file-store run directory
	// <root>/<experiment>/<run>/.
	FormatMLflow Format = "mlflow"
	// FormatAuto asks for Detect explicitly (--metrics F:auto); a Tailer
	// never reads "auto" but the format Detect chose.
	FormatAuto Format = "auto"
)

// Formats lists every format, in the order help text shows them.
var Formats = []Format{FormatVerl, FormatVerlConsole, FormatTRL, FormatTensorBoard, FormatJSONL,
	FormatLlamaFactory, FormatSkyRLConsole, FormatOpenRLHFConsole, FormatWandB, FormatSwanLab, FormatMLflow}

// ParseFormat accepts a format name, with or without the leading colon, or
// "auto".
func ParseFormat(s string) (Format, error) {
	name := strings.TrimPrefix(s, ":")
	if name == string(FormatAuto) {
		return FormatAuto, nil
	}
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("parse format %q: %w (known: %s)", s, ErrUnknownFormat, formatList())
}

func formatList() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return strings.Join(names, ", ") + " or auto"
}

// ParseSpec splits a --metrics argument such as "out/log.jsonl:verl" into a
// path and a format; the format is empty when the argument names none, for
// Detect to decide. A suffix after the last colon that holds no '/' and no
// '.' must be a format name, so a typo is reported rather than taken as part
// of the path.
func ParseSpec(spec string) (string, Format, error) {
	i := strings.LastIndexByte(spec, ':')
	if i < 0 || strings.ContainsAny(spec[i+1:], "/.") {
		return spec, "", nil
	}
	f, err := ParseFormat(spec[i+1:])
	if err != nil {
		return "", "", fmt.Errorf("parse metrics spec %q: %w", spec, err)
	}
	if i == 0 {
		return "", "", fmt.Errorf("parse metrics spec %q: no path", spec)
	}
	return spec[:i], f, nil
}

// sniffLen is how much of a file Detect reads.
const sniffLen = 64 << 10

// Detect names the format of the file at path from its name
// (events.out.tfevents.*, trainer_state.json, trainer_log.jsonl, *.wandb,
// wandb-history.jsonl, backup.swanlab) or else from its first 64 KiB: a
// TFRecord header with a valid checksum; W&B's or SwanLab's record file
// header; a JSON
// first line with step and data (veRL), current_steps (LLaMA-Factory) or
// just a step (JSONL); a JSON document with "log_history" (TRL); or text
// whose step records read as exactly one of the console formats (veRL's
// "step:N - ...", SkyRL's "Step N: " with its dict, OpenRLHF's "Global step
// N: {...}"). A file that says nothing telling yet yields ErrUnknownFormat,
// one that reads as two formats ErrAmbiguousFormat, each naming the file
// and the lines behind the verdict: then name the format in the spec. A
// directory is a tracker's run directory (see detectDir).
func Detect(path string) (Format, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return detectDir(path)
	}
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".wandb") || base == "wandb-history.jsonl":
		return FormatWandB, nil
	case base == "backup.swanlab":
		return FormatSwanLab, nil
	case strings.Contains(base, "tfevents"):
		return FormatTensorBoard, nil
	case base == "trainer_state.json":
		return FormatTRL, nil
	case base == "trainer_log.jsonl":
		return FormatLlamaFactory, nil
	}
	f, err := untrusted.Open(path)
	if err != nil {
		return "", fmt.Errorf("detect metrics format: %w", err)
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, sniffLen))
	if err != nil {
		return "", fmt.Errorf("detect metrics format: %w", err)
	}
	format, err := sniff(head)
	if err != nil {
		return "", fmt.Errorf("detect metrics format of %s: %w; name the format, as in %s:%s", path, err, path, FormatVerl)
	}
	return format, nil
}

// sniff recognises a format from the first bytes of a file.
func sniff(head []byte) (Format, error) {
	switch {
	case bytes.HasPrefix(head, []byte(wandbIdent)):
		return FormatWandB, nil
	case bytes.HasPrefix(head, []byte(swanIdent)):
		return FormatSwanLab, nil
	}
	if len(head) >= tfrecordHeaderLen &&
		binary.LittleEndian.Uint32(head[8:12]) == maskedCRC32C(head[:8]) {
		return FormatTensorBoard, nil
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return "", fmt.Errorf("%w: the file is empty", ErrUnknownFormat)
	case trimmed[0] == '{':
		format, err := sniffJSONLine(trimmed)
		if err != nil && bytes.Contains(head, []byte(`"log_history"`)) {
			return FormatTRL, nil
		}
		if err != nil {
			line := bytes.Count(head[:len(head)-len(trimmed)], []byte{'\n'}) + 1
			return "", fmt.Errorf("line %d: %w", line, err)
		}
		return format, nil
	}
	return sniffConsole(head)
}

// consoleFormats recognise a step record of each console format in one
// line, once colours and Ray's decorations are gone.
var consoleFormats = []struct {
	format Format
	match  func(text []byte) bool
}{
	{FormatVerlConsole, func(text []byte) bool { _, _, ok := cutStep(text); return ok }},
	{FormatSkyRLConsole, func(text []byte) bool { _, ok := cutSkyRLHeader(text); return ok }},
	{FormatOpenRLHFConsole, func(text []byte) bool { _, _, ok := cutOpenRLHFStep(text); return ok }},
}

// sniffConsole finds the console format whose step records the lines of
// head hold: exactly one must match.
func sniffConsole(head []byte) (Format, error) {
	first := make([]int, len(consoleFormats)) // 1-based line of each format's first match
	found := 0
	var lines int
	var clean []byte
	for line := range bytes.SplitSeq(head, []byte{'\n'}) {
		lines++
		for part := range bytes.SplitSeq(line, []byte{'\r'}) {
			clean = stripANSI(clean[:0], part)
			text := trimRayDecoration(clean)
			for i, cf := range consoleFormats {
				if first[i] == 0 && cf.match(text) {
					first[i] = lines
					found++
				}
			}
		}
	}
	var seen []string
	var format Format
	for i, cf := range consoleFormats {
		if first[i] > 0 {
			format = cf.format
			seen = append(seen, fmt.Sprintf("line %d as %s", first[i], cf.format))
		}
	}
	switch found {
	case 0:
		names := make([]string, len(consoleFormats))
		for i, cf := range consoleFormats {
			names[i] = string(cf.format)
		}
		return "", fmt.Errorf("%w: none of its first %d lines is a step record of %s, and it is not JSON", ErrUnknownFormat, lines, strings.Join(names, ", "))
	case 1:
		return format, nil
	}
	return "", fmt.Errorf("%w: it reads as %s", ErrAmbiguousFormat, strings.Join(seen, " and "))
}

// sniffJSONLine tells the JSON-lines formats apart by the members of the
// first line.
func sniffJSONLine(b []byte) (Format, error) {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	var s jsonScanner
	s.reset(line)
	hasStep, hasData, hasCurrent := false, false, false
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "step":
			hasStep = true
		case "data":
			hasData = s.peek() == '{'
		case "current_steps":
			hasCurrent = true
		}
		return s.skip(0)
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: the first line is not one JSON object (%v)", ErrUnknownFormat, err)
	case hasCurrent && hasStep:
		return "", fmt.Errorf("%w: the first line has both current_steps (%s) and step (%s, %s)", ErrAmbiguousFormat, FormatLlamaFactory, FormatVerl, FormatJSONL)
	case hasCurrent:
		return FormatLlamaFactory, nil
	case hasStep && hasData:
		return FormatVerl, nil
	case hasStep:
		return FormatJSONL, nil
	}
	return "", fmt.Errorf("%w: the first line is a JSON object with neither step nor current_steps", ErrUnknownFormat)
}

// Trainer returns the trainer that writes a format, or "" when several do
// (TensorBoard, generic JSONL): then the caller must name the trainer for
// Canonical.
func (f Format) Trainer() Trainer {
	switch f {
	case FormatVerl, FormatVerlConsole:
		return TrainerVerl
	case FormatTRL:
		return TrainerTRL
	case FormatLlamaFactory:
		return TrainerLlamaFactory
	case FormatSkyRLConsole:
		return TrainerSkyRL
	case FormatOpenRLHFConsole:
		return TrainerOpenRLHF
	}
	return ""
}
