package grade

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/stages/jsonl"
)

// Prediction is one predicted query, in gold order.
type Prediction struct {
	Index int    `json:"index"` // position, 0-based, paired with the gold at the same position
	SQL   string `json:"sql"`
	DBID  string `json:"db_id,omitempty"` // as the file states it; grading uses the gold's database
}

// Warning is something a predictions file does that the official reader
// tolerates silently; we read it the same way and say so.
type Warning struct {
	Where string `json:"where"` // "key 17" or "line 3"
	Msg   string `json:"msg"`
}

// Predictions file formats.
const (
	FormatBirdJSON  = "bird-json"  // {"0": "SQL\t----- bird -----\tdb_id", ...}
	FormatSpiderTxt = "spider-txt" // one SQL per line
	FormatJSONL     = "jsonl"      // {"index": 0, "sql": "..."} per line
)

// Formats lists the predictions formats ReadPredictions reads.
var Formats = []string{FormatBirdJSON, FormatSpiderTxt, FormatJSONL}

// ReadPredictions reads a predictions file in format; goldCount, when
// positive, is the number of gold queries the file must match.
func ReadPredictions(r io.Reader, format string, goldCount int) ([]Prediction, []Warning, error) {
	if !slices.Contains(Formats, format) {
		return nil, nil, fmt.Errorf("read predictions: %q: %w", format, ErrUnknownFormat)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s predictions: %w", format, err)
	}
	// Checked before decoding: encoding/json would read invalid UTF-8 as
	// U+FFFD, and the text readers would pass it on to SQLite.
	if err := jsonl.CheckText(raw); err != nil {
		return nil, nil, fmt.Errorf("read %s predictions: %v: %w", format, err, ErrPredictions)
	}
	var preds []Prediction
	var warns []Warning
	switch r := bytes.NewReader(raw); format {
	case FormatBirdJSON:
		preds, warns, err = ReadBirdJSON(r)
	case FormatSpiderTxt:
		preds, err = ReadSpiderTxt(r)
	case FormatJSONL:
		preds, err = ReadJSONL(r)
	}
	if err != nil {
		return nil, nil, err
	}
	if goldCount > 0 && len(preds) != goldCount {
		return nil, nil, fmt.Errorf("read %s predictions: %d predictions for %d gold queries: %w",
			format, len(preds), goldCount, ErrPredictions)
	}
	return preds, warns, nil
}

// birdSeparator splits SQL from db_id in BIRD's predictions.
const birdSeparator = "\t----- bird -----\t"

// ReadBirdJSON reads BIRD's predictions object as evaluation_ex.py does:
// values pair with gold queries by their position in the file, not by key;
// "SQL<sep>db_id" is split at the separator. A string without exactly one
// separator becomes the whole string, trimmed, as a query on db
// "financial"; a value that is not a string becomes the query " ". Both
// are warnings naming the key, as are keys that are not the position and
// duplicate keys (the later value takes the earlier key's place, as in a
// Python dict).
func ReadBirdJSON(r io.Reader) ([]Prediction, []Warning, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read bird-json predictions: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, fmt.Errorf("read bird-json predictions: want a JSON object: %w", ErrPredictions)
	}
	var preds []Prediction
	var warns []Warning
	pos := make(map[string]int)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("read bird-json predictions after %d entries: %v: %w", len(preds), err, ErrPredictions)
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("read bird-json predictions: key %q: %v: %w", key, err, ErrPredictions)
		}
		where := fmt.Sprintf("key %s (line %d)", strconv.Quote(key), bytes.Count(data[:dec.InputOffset()], []byte("\n"))+1)
		p := Prediction{DBID: "financial"}
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil { // null unmarshals into a string
			p.SQL = " "
			warns = append(warns, Warning{where, "value is not a string; read as the query \" \" on financial"})
		} else if sql, db, ok := strings.Cut(s, birdSeparator); ok && !strings.Contains(db, birdSeparator) {
			p.SQL, p.DBID = sql, db
		} else {
			p.SQL = strings.TrimSpace(s)
			warns = append(warns, Warning{where, "no single bird separator; read the whole value as a query on financial"})
		}
		if i, dup := pos[key]; dup {
			p.Index = i
			preds[i] = p
			warns = append(warns, Warning{where, "duplicate key; the later value replaces the earlier at its position"})
			continue
		}
		p.Index = len(preds)
		pos[key] = p.Index
		if key != strconv.Itoa(p.Index) {
			warns = append(warns, Warning{where, fmt.Sprintf("key is not the position %d; paired by position", p.Index)})
		}
		preds = append(preds, p)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("read bird-json predictions: %v: %w", err, ErrPredictions)
	}
	return preds, warns, nil
}

// ReadSpiderTxt reads one query per line. The Spider evaluator drops
// blank lines, which silently pairs every later prediction with the wrong
// gold; here a blank line is an error naming it. As there, a line is
// trimmed and anything after a tab is ignored.
func ReadSpiderTxt(r io.Reader) ([]Prediction, error) {
	var preds []Prediction
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; s.Scan(); line++ {
		sql, _, _ := strings.Cut(strings.TrimSpace(s.Text()), "\t")
		if sql == "" {
			return nil, fmt.Errorf("read spider-txt predictions: line %d is blank: %w", line, ErrPredictions)
		}
		preds = append(preds, Prediction{Index: line - 1, SQL: sql})
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read spider-txt predictions after line %d: %v: %w", len(preds), err, ErrPredictions)
	}
	return preds, nil
}

// ReadJSONL reads {"index": i, "sql": "..."} objects, one per line
// (db_id optional, nothing else), blank lines skipped. Indexes must be
// 0…n−1, each once; the predictions come back in index order.
func ReadJSONL(r io.Reader) ([]Prediction, error) {
	type record struct {
		Index *int    `json:"index"`
		SQL   *string `json:"sql"`
		DBID  string  `json:"db_id"`
	}
	byIndex := make(map[int]Prediction)
	lineOf := make(map[int]int)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for s.Scan() {
		line++
		b := bytes.TrimSpace(s.Bytes())
		if len(b) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var rec record
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("read jsonl predictions: line %d: %v: %w", line, err, ErrPredictions)
		}
		if rec.Index == nil || rec.SQL == nil {
			return nil, fmt.Errorf("read jsonl predictions: line %d: want \"index\" and \"sql\": %w", line, ErrPredictions)
		}
		if prev, dup := lineOf[*rec.Index]; dup {
			return nil, fmt.Errorf("read jsonl predictions: line %d: index %d already on line %d: %w", line, *rec.Index, prev, ErrPredictions)
		}
		byIndex[*rec.Index] = Prediction{Index: *rec.Index, SQL: *rec.SQL, DBID: rec.DBID}
		lineOf[*rec.Index] = line
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read jsonl predictions after line %d: %v: %w", line, err, ErrPredictions)
	}
	preds := make([]Prediction, len(byIndex))
	badLine, badIndex := 0, 0 // the first line whose index is out of range
	for i, p := range byIndex {
		if i < 0 || i >= len(preds) {
			if badLine == 0 || lineOf[i] < badLine {
				badLine, badIndex = lineOf[i], i
			}
			continue
		}
		preds[i] = p
	}
	if badLine > 0 {
		return nil, fmt.Errorf("read jsonl predictions: line %d: index %d outside 0…%d: %w", badLine, badIndex, len(preds)-1, ErrPredictions)
	}
	return preds, nil
}
