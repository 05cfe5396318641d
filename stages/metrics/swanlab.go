package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"
)

// SwanLab 0.6's backup.swanlab (SwanHubX/SwanLab swanlab/data/porter/
// datastore.py, swanlab/proto/v0.py): W&B's framing under the header
// ":SWL", magic 0xE1D6, version 1, each record a JSON line
// {"model_type": T, "data": {...}}. Later versions write protobuf records
// under another version number; those are refused by name.
const (
	swanIdent       = ":SWL"
	swanMagic       = 0xE1D6
	swanVersionJSON = 1
)

// swanDecoder turns backup.swanlab records into points and the run's
// description.
type swanDecoder struct {
	columns []swanColumn // in file order
}

// swanColumn is a Column record: the metric key and the folder (kid) its
// summary sits in under logs/.
type swanColumn struct {
	Key string `json:"key"`
	Kid string `json:"kid"`
	Cls string `json:"cls"`
}

type swanRecord struct {
	Type string          `json:"model_type"`
	Data json.RawMessage `json:"data"`
}

type swanScalar struct {
	Metric struct {
		Index *int64          `json:"index"`
		Data  json.RawMessage `json:"data"`
	} `json:"metric"`
	Key string `json:"key"`
}

// record decodes one record. A Scalar becomes a point at its metric's
// index; SwanLab writes NaN as "NaN" and both infinities as "INF", read as
// +Inf (the writer lost the sign).
func (d *swanDecoder) record(sk *sink, run *TrackerRun, b []byte) error {
	var r swanRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("record is not JSON: %v", err)
	}
	switch r.Type {
	case "Scalar":
		var s swanScalar
		if err := json.Unmarshal(r.Data, &s); err != nil {
			return fmt.Errorf("Scalar record: %v", err)
		}
		if s.Metric.Index == nil || s.Key == "" {
			return fmt.Errorf("Scalar record without key or metric index")
		}
		if err := checkStep(*s.Metric.Index); err != nil {
			return fmt.Errorf("Scalar record of %q: %w", s.Key, err)
		}
		sk.begin()
		if v, ok := swanNumber(s.Metric.Data); ok {
			sk.add([]byte(s.Key), v)
		} else {
			sk.stats.Skipped++
		}
		sk.commit(*s.Metric.Index)
	case "Column":
		var c swanColumn
		if err := json.Unmarshal(r.Data, &c); err != nil {
			return fmt.Errorf("Column record: %v", err)
		}
		d.columns = append(d.columns, c)
	case "Experiment":
		var e struct{ ID, Name string }
		if err := json.Unmarshal(r.Data, &e); err != nil {
			return fmt.Errorf("Experiment record: %v", err)
		}
		run.ID, run.Name = e.ID, e.Name
	case "Project":
		var p struct{ Name string }
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return fmt.Errorf("Project record: %v", err)
		}
		run.Project = p.Name
	case "Header":
		var h struct {
			CreateTime string `json:"create_time"`
		}
		if json.Unmarshal(r.Data, &h) == nil {
			run.Start, _ = time.Parse(time.RFC3339Nano, h.CreateTime)
		}
	case "Log":
		var l struct{ Message string }
		if json.Unmarshal(r.Data, &l) == nil {
			run.Output = append(append(run.Output, l.Message...), '\n')
		}
	case "Footer":
		var f struct {
			Success    bool   `json:"success"`
			CreateTime string `json:"create_time"`
		}
		if err := json.Unmarshal(r.Data, &f); err != nil {
			return fmt.Errorf("Footer record: %v", err)
		}
		run.OK = f.Success
		run.Status = "CRASHED"
		if f.Success {
			run.Status = "SUCCESS"
		}
		run.End, _ = time.Parse(time.RFC3339Nano, f.CreateTime)
	default:
		sk.stats.Ignored++
	}
	return nil
}

// swanNumber reads a Scalar's data: a JSON number, "NaN" or "INF".
func swanNumber(b json.RawMessage) (float64, bool) {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		switch x {
		case "NaN":
			return math.NaN(), true
		case "INF":
			return math.Inf(1), true
		}
	}
	return 0, false
}

// readSide reads the run directory's files/config.yaml, unwrapping each
// key's {desc, sort, value}, and each logs/<kid>/_summary.json, keyed by its
// column's key.
func (d *swanDecoder) readSide(run *TrackerRun, dir string) {
	if b, err := readSideFile(filepath.Join(dir, "files", "config.yaml")); err == nil {
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			run.finding("swanlab %s: files/config.yaml: %v", dir, err)
		}
		setConfig(run, dir, doc)
	} else if !isNotExist(err) {
		run.finding("swanlab %s: %v", dir, err)
	}
	for _, c := range d.columns {
		if !safeName(c.Kid) {
			continue
		}
		b, err := readSideFile(filepath.Join(dir, "logs", c.Kid, "_summary.json"))
		switch {
		case isNotExist(err):
		case err != nil:
			run.finding("swanlab %s: %v", dir, err)
		case !json.Valid(b):
			run.finding("swanlab %s: logs/%s/_summary.json is not JSON", dir, c.Kid)
		default:
			if run.Summary == nil {
				run.Summary = make(map[string]json.RawMessage)
			}
			run.Summary[c.Key] = json.RawMessage(b)
		}
	}
}

// setConfig records a tracker's config.yaml (W&B's and SwanLab's write
// each key as {desc, value} or {desc, sort, value}), unwrapping each value.
func setConfig(run *TrackerRun, dir string, doc map[string]any) {
	for k, v := range doc {
		if w, ok := v.(map[string]any); ok {
			if inner, ok := w["value"]; ok {
				v = inner
			}
		}
		js, err := json.Marshal(StringKeys(v))
		if err != nil {
			run.finding("%s %s: config %s: %v", run.Tracker, dir, k, err)
			continue
		}
		if run.Config == nil {
			run.Config = make(map[string]json.RawMessage)
		}
		run.Config[k] = js
	}
}
