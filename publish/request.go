package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// Request is where a run's checkpoint is to be published and with which
// key (a path: the key itself never enters the ledger).
type Request struct {
	To      string `json:"to"`
	KeyFile string `json:"key_file"`
}

// CheckRequest checks, before a stage runs, that a publish it asks for
// could be done: to is absent or empty and key is a usable signing key.
// It returns the absolute paths to record.
func CheckRequest(to, key string) (Request, error) {
	absTo, err := CheckTarget(to)
	if err != nil {
		return Request{}, err
	}
	if _, err := LoadSigner(key); err != nil {
		return Request{}, err
	}
	absKey, err := filepath.Abs(key)
	if err != nil {
		return Request{}, err
	}
	return Request{To: absTo, KeyFile: absKey}, nil
}

// RecordRequest records r for run, which must have written a checkpoint,
// and returns the entry and the checkpoint's model identity.
func RecordRequest(ctx context.Context, l *ledger.Ledger, run string, r Request) (ledger.Entry, ledger.Digest, error) {
	ck, err := outputCheckpoint(ctx, l, run)
	if err != nil {
		return ledger.Entry{}, ledger.Digest{}, err
	}
	es, err := l.Append(ctx, ledger.Record{Kind: records.KindRequest, Run: run, Body: r})
	if err != nil {
		return ledger.Entry{}, ledger.Digest{}, fmt.Errorf("record publish request: %w", err)
	}
	return es[0], ck.Digest, nil
}

// RequestOutcome is what became of one publish request after a gate.
type RequestOutcome struct {
	Request  int64   `json:"request_seq"`
	Run      string  `json:"run"`
	To       string  `json:"to"`
	Withheld string  `json:"withheld,omitempty"` // why nothing was published
	Result   *Result `json:"published,omitempty"`
	Error    string  `json:"error,omitempty"`
}

// AfterGate acts on the publish requests still pending for the model
// identity the verdict v was recorded for: a passing verdict publishes
// each (and records it), a failing one withholds them, which they stay
// pending for a later gate. A verdict not recorded (a dry run) or bound to
// no model does nothing. The error is the first publish that failed;
// the outcomes say which.
func AfterGate(ctx context.Context, l *ledger.Ledger, v *audit.Verdict) ([]RequestOutcome, error) {
	if v.Seq == 0 || v.ModelIdentity == nil {
		return nil, nil
	}
	pending, err := pendingRequests(ctx, l, *v.ModelIdentity)
	if err != nil {
		return nil, err
	}
	var out []RequestOutcome
	var first error
	for _, p := range pending {
		o := RequestOutcome{Request: p.seq, Run: p.run, To: p.To}
		if !v.OK {
			o.Withheld = fmt.Sprintf("the gate failed (verdict entry %d)", v.Seq)
		} else if o.Result, err = Publish(ctx, l, Options{Run: p.run, To: p.To, Key: p.KeyFile, Request: p.seq}); errors.Is(err, ErrNotGated) {
			// Passed, and still not to be published unattended: another
			// run is gated, or an earlier verdict for the model failed.
			o.Withheld = err.Error()
		} else if err != nil {
			o.Error = err.Error()
			if first == nil {
				first = fmt.Errorf("publish request entry %d: %w", p.seq, err)
			}
		}
		out = append(out, o)
	}
	return out, first
}

// pending is a publish request with no publish entry fulfilling it.
type pending struct {
	Request
	seq int64
	run string
}

// pendingRequests lists the unfulfilled publish requests whose run's
// checkpoint has model identity id, oldest first.
func pendingRequests(ctx context.Context, l *ledger.Ledger, id ledger.Digest) ([]pending, error) {
	done := map[int64]bool{}
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindPublish}) {
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return nil, fmt.Errorf("publish entry %d: %w", e.Seq, err)
		}
		done[r.Request] = true
	}
	var out []pending
	for e, err := range l.Entries(ctx, ledger.Filter{Kind: records.KindRequest}) {
		if err != nil {
			return nil, err
		}
		if done[e.Seq] {
			continue
		}
		p := pending{seq: e.Seq, run: e.Run}
		if err := json.Unmarshal(e.Body, &p.Request); err != nil {
			return nil, fmt.Errorf("publish request entry %d: %w", e.Seq, err)
		}
		ck, err := outputCheckpoint(ctx, l, e.Run)
		if err != nil {
			return nil, err
		}
		if ck.Digest == id {
			out = append(out, p)
		}
	}
	return out, nil
}
