package metrics

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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
)

// Formats lists every format, in the order help text shows them.
var Formats = []Format{FormatVerl, FormatVerlConsole, FormatTRL, FormatTensorBoard, FormatJSONL}

// ParseFormat accepts a format name, with or without the leading colon.
func ParseFormat(s string) (Format, error) {
	name := strings.TrimPrefix(s, ":")
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
	return strings.Join(names, ", ")
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
// (events.out.tfevents.*, trainer_state.json) or else from its first bytes:
// a TFRecord header with a valid checksum, a JSON document with
// "log_history", a JSON line with step and data (veRL) or just a step
// (JSONL), or a veRL console step line. A file that is empty or still says
// nothing telling yields ErrUnknownFormat: name the format in the spec.
func Detect(path string) (Format, error) {
	base := filepath.Base(path)
	switch {
	case strings.Contains(base, "tfevents"):
		return FormatTensorBoard, nil
	case base == "trainer_state.json":
		return FormatTRL, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("detect metrics format: %w", err)
	}
	defer f.Close()
	head, err := io.ReadAll(io.LimitReader(f, sniffLen))
	if err != nil {
		return "", fmt.Errorf("detect metrics format: %w", err)
	}
	if format, ok := sniff(head); ok {
		return format, nil
	}
	return "", fmt.Errorf("detect metrics format of %s: %w; name it, as in %s:verl", path, ErrUnknownFormat, path)
}

// sniff recognises a format from the first bytes of a file.
func sniff(head []byte) (Format, bool) {
	if len(head) >= tfrecordHeaderLen &&
		binary.LittleEndian.Uint32(head[8:12]) == maskedCRC32C(head[:8]) {
		return FormatTensorBoard, true
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if format, ok := sniffJSONLine(trimmed); ok {
			return format, true
		}
		if bytes.Contains(head, []byte(`"log_history"`)) {
			return FormatTRL, true
		}
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(nil, sniffLen)
	var d consoleDecoder
	var sk sink
	for sc.Scan() {
		if d.line(&sk, sc.Bytes(), Cursor{}); d.open {
			return FormatVerlConsole, true
		}
	}
	return "", false
}

// sniffJSONLine tells veRL's file logger from generic JSONL by the members of
// the first line.
func sniffJSONLine(b []byte) (Format, bool) {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	var s jsonScanner
	s.reset(line)
	hasStep, hasData := false, false
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "step":
			hasStep = true
		case "data":
			hasData = s.peek() == '{'
		}
		return s.skip(0)
	})
	switch {
	case err != nil || !hasStep:
		return "", false
	case hasData:
		return FormatVerl, true
	}
	return FormatJSONL, true
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
	}
	return ""
}
