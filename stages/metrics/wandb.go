package metrics

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"google.golang.org/protobuf/encoding/protowire"
)

// W&B's run-*.wandb header: ident ":W&B", magic 0xBEE1; version 0 from the
// Python writer and the Go core (wandb/wandb core/internal/stream/store.go),
// 1 from early core builds. The records are the same protobuf either way.
const (
	wandbIdent = ":W&B"
	wandbMagic = 0xBEE1
)

// Field numbers of wandb/proto/wandb_internal.proto (the same at v0.14.2,
// v0.18.7 and v0.21.0; see testdata/trackers/SOURCES.md).
const (
	// message Record { int64 num = 1; oneof record_type { HistoryRecord
	// history = 2; SummaryRecord summary = 3; OutputRecord output = 4;
	// ConfigRecord config = 5; …; OutputRawRecord output_raw = 13; …;
	// RunRecord run = 17; RunExitRecord exit = 18; … } }
	wbHistory   = 2
	wbSummary   = 3
	wbOutput    = 4
	wbConfig    = 5
	wbOutputRaw = 13
	wbRun       = 17
	wbExit      = 18

	// HistoryRecord { repeated HistoryItem item = 1; HistoryStep step = 2 }
	// HistoryStep { int64 num = 1 }
	wbHistItem = 1
	wbHistStep = 2
	wbStepNum  = 1

	// HistoryItem, SummaryItem, ConfigItem { string key = 1; repeated
	// string nested_key = 2; string value_json = 16 }
	wbItemKey    = 1
	wbItemNested = 2
	wbItemValue  = 16

	// SummaryRecord, ConfigRecord { repeated …Item update = 1; repeated
	// …Item remove = 2 }
	wbUpdate = 1
	wbRemove = 2

	// RunRecord { string run_id = 1; string entity = 2; string project = 3;
	// ConfigRecord config = 4; SummaryRecord summary = 5; …; string
	// display_name = 8; …; google.protobuf.Timestamp start_time = 17 }
	wbRunID      = 1
	wbRunProject = 3
	wbRunConfig  = 4
	wbRunSummary = 5
	wbRunName    = 8
	wbRunStart   = 17

	// Timestamp { int64 seconds = 1; int32 nanos = 2 }
	tsSeconds = 1
	tsNanos   = 2

	// RunExitRecord { int32 exit_code = 1; int32 runtime = 2 }
	wbExitCode    = 1
	wbExitRuntime = 2

	// OutputRecord, OutputRawRecord { OutputType output_type = 1; …
	// timestamp = 2; string line = 3 }
	wbOutputLine = 3
)

// wandbDecoder turns W&B records into points and the run's description.
type wandbDecoder struct {
	p       historyParser
	row     historyRow // the row being decoded, its items' memory reused
	rows    int64      // history rows so far: the step of a row without one
	runtime int64      // exit record's runtime, seconds
}

// W&B's words for how a run ended, which TrackerRun.Status keeps as the
// tracker said them (they are not the ledger's run statuses).
const (
	wandbFinished = "finished"
	wandbFailed   = "failed"
)

// wandbItem is one HistoryItem, SummaryItem or ConfigItem; key and value
// are valid until the next decodeItem.
type wandbItem struct {
	key   []byte
	value []byte
}

// historyParser parses history rows and items; it holds the scratch
// memory they need, so each goroutine parsing rows has its own.
type historyParser struct {
	scan jsonScanner
	key  []byte // nested_key joined with "/", valid until the next decodeItem
	kept []byte // nested keys of parsed rows, see keep
}

// decodeItem reads key (nested_key joined with "/" when present, as
// wandb-core's keyPath does) and value_json without copying them.
func (p *historyParser) decodeItem(b []byte) (wandbItem, error) {
	var it wandbItem
	p.key = p.key[:0]
	var key []byte
	nested := false
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case wbItemKey:
			key = v
		case wbItemNested:
			if nested {
				p.key = append(p.key, '/')
			}
			p.key = append(p.key, v...)
			nested = true
		case wbItemValue:
			it.value = v
		}
		return nil
	})
	it.key = key
	if nested {
		it.key = p.key
	}
	return it, err
}

// keep copies a nested key out of the scratch decodeItem reuses, into
// chunks that are never written again, so that a parsed row's keys stay
// valid until the row is applied.
func (p *historyParser) keep(b []byte) []byte {
	if cap(p.kept)-len(p.kept) < len(b) {
		p.kept = make([]byte, 0, max(16<<10, len(b)))
	}
	p.kept = append(p.kept, b...)
	return p.kept[len(p.kept)-len(b) : len(p.kept) : len(p.kept)]
}

// record decodes one Record into sk and run. pre, when not nil, holds its
// history rows already parsed (see wandbBatch), in the order the record
// holds them.
func (d *wandbDecoder) record(sk *sink, run *TrackerRun, b []byte, pre []historyRow) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case wbHistory:
			row := &d.row
			if len(pre) > 0 {
				row, pre = &pre[0], pre[1:]
			} else {
				d.p.parseHistory(row, v)
			}
			return d.history(sk, row)
		case wbSummary:
			return d.apply(&run.Summary, v)
		case wbConfig:
			return d.apply(&run.Config, v)
		case wbOutput, wbOutputRaw:
			return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == wbOutputLine && typ == protowire.BytesType {
					run.Output = append(run.Output, v...)
				}
				return nil
			})
		case wbRun:
			return d.run(run, v)
		case wbExit:
			return d.exit(run, v)
		}
		sk.stats.Ignored++
		return nil
	})
}

// historyRow is one HistoryRecord parsed, ready for wandbDecoder.history:
// its numeric items in order, how many values were not numbers, its step
// fields, and the error that ended its parse.
type historyRow struct {
	items           []historyItem
	skipped         int64
	step, num       int64
	hasStep, hasNum bool
	err             error
	stepErr         bool // err is _step's
}

// historyItem is one numeric HistoryItem; key points into the record (or
// into historyParser.keep's memory).
type historyItem struct {
	key []byte
	v   float64
}

// parseHistory parses a HistoryRecord into row. It needs nothing but p,
// so rows can be parsed on several goroutines at once and applied in
// order (see wandbBatch): parsing is most of a W&B read's time.
func (p *historyParser) parseHistory(row *historyRow, b []byte) {
	*row = historyRow{items: row.items[:0]}
	row.err = eachField(b, func(fn protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case fn == wbHistItem && typ == protowire.BytesType:
			it, err := p.decodeItem(v)
			if err != nil {
				return err
			}
			p.scan.reset(it.value)
			if string(it.key) == "_step" {
				s, err := p.scan.integer()
				if err != nil {
					row.stepErr = true
					return err
				}
				row.step, row.hasStep = s, true
				return nil
			}
			x, ok, err := p.scan.number()
			if err == nil && ok && p.scan.expectEnd() == nil {
				key := it.key
				if len(p.key) > 0 {
					key = p.keep(key)
				}
				row.items = append(row.items, historyItem{key, x})
			} else {
				row.skipped++
			}
		case fn == wbHistStep && typ == protowire.BytesType:
			return eachField(v, func(fn protowire.Number, typ protowire.Type, _ []byte, u uint64) error {
				if fn == wbStepNum && typ == protowire.VarintType {
					row.num, row.hasNum = int64(u), true
				}
				return nil
			})
		}
		return nil
	})
}

// history adds one parsed history row as a record at its _step (else
// HistoryStep.num, else the row's index). Values that are not numbers are
// skipped and counted.
func (d *wandbDecoder) history(sk *sink, row *historyRow) error {
	sk.stats.Skipped += row.skipped
	switch {
	case row.stepErr:
		return fmt.Errorf("history row %d: _step: %w", d.rows, row.err)
	case row.err != nil:
		return row.err
	}
	step := d.rows
	switch {
	case row.hasStep:
		step = row.step
	case row.hasNum:
		step = row.num
	}
	if err := checkStep(step); err != nil {
		return fmt.Errorf("history row %d: %w", d.rows, err)
	}
	sk.begin()
	for _, it := range row.items {
		sk.add(it.key, it.v)
	}
	d.rows++
	sk.commit(step)
	return nil
}

// apply applies a SummaryRecord or ConfigRecord's updates and removals to m.
func (d *wandbDecoder) apply(m *map[string]json.RawMessage, b []byte) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType || num != wbUpdate && num != wbRemove {
			return nil
		}
		it, err := d.p.decodeItem(v)
		if err != nil {
			return err
		}
		if num == wbRemove {
			delete(*m, string(it.key))
			return nil
		}
		if *m == nil {
			*m = make(map[string]json.RawMessage)
		}
		(*m)[string(it.key)] = jsonValue(it.value)
		return nil
	})
}

// jsonValue keeps a recorded JSON value as it is when it is valid JSON and
// as a JSON string of its text otherwise (Python writes NaN, which JSON
// cannot hold).
func jsonValue(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// run reads a RunRecord: its identity, start time, and the config and
// summary it carries.
func (d *wandbDecoder) run(run *TrackerRun, b []byte) error {
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case wbRunID:
			run.ID = string(v)
		case wbRunProject:
			run.Project = string(v)
		case wbRunName:
			run.Name = string(v)
		case wbRunConfig:
			return d.apply(&run.Config, v)
		case wbRunSummary:
			return d.apply(&run.Summary, v)
		case wbRunStart:
			var sec, nanos int64
			err := eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte, u uint64) error {
				switch {
				case num == tsSeconds && typ == protowire.VarintType:
					sec = int64(u)
				case num == tsNanos && typ == protowire.VarintType:
					nanos = int64(int32(u))
				}
				return nil
			})
			run.Start = time.Unix(sec, nanos).UTC()
			return err
		}
		return nil
	})
}

// exit reads a RunExitRecord: exit code 0 (or absent, proto3's default) is
// finished, anything else failed.
func (d *wandbDecoder) exit(run *TrackerRun, b []byte) error {
	var code int64
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _ []byte, u uint64) error {
		switch {
		case num == wbExitCode && typ == protowire.VarintType:
			code = int64(int32(u))
		case num == wbExitRuntime && typ == protowire.VarintType:
			d.runtime = int64(int32(u))
		}
		return nil
	})
	run.ExitCode = &code
	run.OK = code == 0
	run.Status = wandbFinished
	if code != 0 {
		run.Status = wandbFailed
	}
	if !run.Start.IsZero() {
		run.End = run.Start.Add(time.Duration(d.runtime) * time.Second)
	}
	return err
}

// readWandBHistorySide reads what a pre-0.10 W&B run keeps beside its
// wandb-history.jsonl: wandb-summary.json (the summary), config.yaml (each
// key's {desc, value} unwrapped) and wandb-metadata.json, whose state and
// exitcode, when present, are the end state; without them the run is
// incomplete. Problems are findings.
func readWandBHistorySide(run *TrackerRun, dir string) {
	if b, err := readSideFile(filepath.Join(dir, "wandb-summary.json")); err == nil {
		if err := json.Unmarshal(b, &run.Summary); err != nil {
			run.finding("wandb %s: wandb-summary.json: %v", dir, err)
		}
	} else if !isNotExist(err) {
		run.finding("wandb %s: %v", dir, err)
	}
	if b, err := readSideFile(filepath.Join(dir, "config.yaml")); err == nil {
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			run.finding("wandb %s: config.yaml: %v", dir, err)
		}
		setConfig(run, dir, doc)
	} else if !isNotExist(err) {
		run.finding("wandb %s: %v", dir, err)
	}
	b, err := readSideFile(filepath.Join(dir, "wandb-metadata.json"))
	if err != nil {
		if !isNotExist(err) {
			run.finding("wandb %s: %v", dir, err)
		}
		return
	}
	var meta struct {
		State     string   `json:"state"`
		ExitCode  *float64 `json:"exitcode"`
		StartedAt string   `json:"startedAt"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		run.finding("wandb %s: wandb-metadata.json: %v", dir, err)
		return
	}
	run.Start, _ = time.Parse("2006-01-02T15:04:05.999999", meta.StartedAt)
	if meta.ExitCode == nil {
		return
	}
	code := int64(*meta.ExitCode)
	run.ExitCode = &code
	run.OK = code == 0 && (meta.State == "" || meta.State == "finished")
	run.Status = meta.State
	if run.Status == "" {
		run.Status = wandbFinished
		if code != 0 {
			run.Status = wandbFailed
		}
	}
}
