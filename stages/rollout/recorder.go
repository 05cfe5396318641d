package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// Flush defaults: finished episodes reach the ledger within FlushEvery, in
// batches of at most FlushEpisodes, so a crash loses at most that much.
const (
	DefaultFlushEvery    = 200 * time.Millisecond
	DefaultFlushEpisodes = 64
)

// recorder batches finished episodes into one blob and one trajectories
// entry per flush. It is the only writer of a run's trajectories, so an
// episode is recorded once.
type recorder struct {
	l     *ledger.Ledger
	run   string
	every time.Duration
	max   int
	in    chan *Episode
	mask  *ledger.Masker // the client's: bodies may echo the API key
}

// loop records what arrives on r.in until it is closed, then flushes the
// rest. ctx must outlive an interruption of the run, so the episodes that
// finished are kept.
func (r *recorder) loop(ctx context.Context) error {
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	var buf []*Episode
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := r.flush(ctx, buf)
		buf = buf[:0]
		return err
	}
	for {
		select {
		case ep, ok := <-r.in:
			if !ok {
				return flush()
			}
			buf = append(buf, ep)
			if len(buf) >= r.max {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// flush writes eps as one JSON-lines blob, then the entry naming it. Every
// string of an episode (request and response bodies, replies, errors) is
// masked of the secrets the client knows and those the redaction rule
// finds; a normal episode holds none and is recorded byte for byte.
func (r *recorder) flush(ctx context.Context, eps []*Episode) error {
	var blob, line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // replies are full of <think> and <sql>
	body := Trajectories{Episodes: make([]EpisodeRef, len(eps))}
	for i, ep := range eps {
		off := int64(blob.Len())
		line.Reset()
		if err := enc.Encode(ep); err != nil {
			return fmt.Errorf("record episode %s#%d: %w", ep.TaskID, ep.Sample, err)
		}
		masked, err := r.mask.JSON(line.Bytes())
		if err != nil {
			return fmt.Errorf("record episode %s#%d: %w", ep.TaskID, ep.Sample, err)
		}
		blob.Write(masked)
		body.Episodes[i] = EpisodeRef{TaskID: ep.TaskID, Sample: ep.Sample, StopReason: ep.StopReason, Turns: ep.Usage.Turns,
			SQLExecutions: ep.Usage.SQLExecutions, TokensIn: ep.Usage.TokensIn, TokensOut: ep.Usage.TokensOut,
			FinalSQL: r.mask.String(ep.FinalSQL), Line: i, Offset: off, Length: int64(blob.Len()) - off - 1}
	}
	d, err := r.l.PutBlobBytes(blob.Bytes())
	if err != nil {
		return fmt.Errorf("record trajectories: %w", err)
	}
	body.Blob = d
	if _, err := r.l.Append(ctx, ledger.Record{Kind: records.KindTrajectories, Run: r.run, Body: body, Blobs: []ledger.Digest{d}}); err != nil {
		return fmt.Errorf("record trajectories: %w", err)
	}
	return nil
}
