package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/gold"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/tasks"
	"golang.org/x/sync/errgroup"
)

// rolloutScan is what the audits read of a rollout's recorded episodes:
// per task, every distinct message the policy was given (system and user
// messages of every request body: prompts, observations, corrections),
// with where it was seen, and how its SQL executions ended. Distinct
// messages are kept once, so the prompt that every sample of a task shares
// is held and searched once.
type rolloutScan struct {
	Tasks map[string]*taskMessages
	scanScratch
	Episodes int
	SQLRuns  int // executed <sql> turns
	Timeouts int
	// TimeoutSeqs are the trajectories entries holding a timed-out
	// execution.
	TimeoutSeqs []int64
}

// taskMessages are the distinct policy-visible messages of one task.
type taskMessages struct {
	Messages []*seenMessage
	index    map[string]map[string]*seenMessage // by role, then content
	// opening is the quoted messages of the task's first request as an
	// episode line holds them, and openingMsgs their policy messages:
	// every sample of a task opens with them, so a later request that
	// starts with these bytes has only its remaining messages decoded.
	// openingSeen are their entries in Messages, once seen: an episode
	// that opens with them is added to these without a look-up.
	opening     []byte
	openingMsgs []rollout.Message
	openingSeen []*seenMessage
}

// seenMessage is one distinct message and the episodes that were sent it.
type seenMessage struct {
	Role    string
	Content string
	Samples []int
	Seqs    []int64
}

// episodeView is the part of a recorded episode the audits read.
type episodeView struct {
	TaskID string `json:"task_id"`
	Sample int    `json:"sample"`
	Turns  []struct {
		Request   rollout.Body `json:"request"`
		SQLStatus string       `json:"sql_status"`
	} `json:"turns"`
}

// scanCache holds what one audit or gate run reads of each rollout (its
// list of recorded episodes, and its scan) and of each tasks file, so
// audits that read the same rollout or file read it once. Different
// rollouts are read at the same time.
type scanCache struct {
	records ledger.Memo[[]rollout.Recorded]
	scans   ledger.Memo[*rolloutScan]
	tasks   ledger.Memo[[]tasks.Task]
	golds   ledger.Memo[[]gold.Gold]
}

// readTasks reads the tasks file the ledger recorded at path with digest
// want, wherever it lies now, once for every audit of the run that asks;
// readers must not change what it returns.
func (c *scanCache) readTasks(ctx context.Context, l *ledger.Ledger, path string, want ledger.Digest) ([]tasks.Task, error) {
	var m *ledger.Memo[[]tasks.Task]
	if c != nil {
		m = &c.tasks
	}
	return readRecorded(ctx, l, m, path, want, tasks.Parse)
}

// readGold is readTasks for a gold file.
func (c *scanCache) readGold(ctx context.Context, l *ledger.Ledger, path string, want ledger.Digest) ([]gold.Gold, error) {
	var m *ledger.Memo[[]gold.Gold]
	if c != nil {
		m = &c.golds
	}
	return readRecorded(ctx, l, m, path, want, gold.Parse)
}

// readRecorded parses the file the ledger recorded at path with digest
// want, wherever it lies now (dataset.ReadRecorded), through memo when it
// is not nil.
func readRecorded[T any](ctx context.Context, l *ledger.Ledger, memo *ledger.Memo[T], path string, want ledger.Digest, parse func(string, []byte) (T, error)) (T, error) {
	read := func() (T, error) {
		raw, err := dataset.ReadRecorded(ctx, l, path, want)
		if err != nil {
			var zero T
			return zero, err
		}
		return parse(path, raw)
	}
	if memo == nil {
		return read()
	}
	return memo.Get(ctx, path+"\x00"+want.String(), read)
}

// recorded returns the recorded episodes of rollout run, listed once for
// every audit of the run that asks (the scan and the budget audit both
// read the list); readers must not change it.
func (c *scanCache) recorded(ctx context.Context, l *ledger.Ledger, run string) ([]rollout.Recorded, error) {
	if c == nil {
		return rollout.ReadRecorded(ctx, l, run)
	}
	return c.records.Get(ctx, run, func() ([]rollout.Recorded, error) { return rollout.ReadRecorded(ctx, l, run) })
}

// scan returns the scan of rollout run, decoding its blobs on every core
// the first time.
func (c *scanCache) scan(ctx context.Context, l *ledger.Ledger, run string) (*rolloutScan, error) {
	if c == nil {
		return scanRollout(ctx, l, run, nil)
	}
	return c.scans.Get(ctx, run, func() (*rolloutScan, error) { return scanRollout(ctx, l, run, c) })
}

// scanAll scans the rollouts of evals at the same time, so one's serial
// parts (listing its episodes) overlap another's blob reads.
func (c *scanCache) scanAll(ctx context.Context, l *ledger.Ledger, evals []*evalRun) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, e := range evals {
		g.Go(func() error {
			_, err := c.scan(ctx, l, e.grade.Rollout)
			return err
		})
	}
	return g.Wait()
}

// scanRollout reads every episode of a rollout run from its blobs
// (re-hashing each), one blob per worker.
func scanRollout(ctx context.Context, l *ledger.Ledger, run string, c *scanCache) (*rolloutScan, error) {
	recs, err := c.recorded(ctx, l, run)
	if err != nil {
		return nil, err
	}
	var blobs []ledger.Digest
	byBlob := map[ledger.Digest][]rollout.Recorded{}
	for _, r := range recs {
		if _, ok := byBlob[r.Blob]; !ok {
			blobs = append(blobs, r.Blob)
		}
		byBlob[r.Blob] = append(byBlob[r.Blob], r)
	}
	parts := make([]*rolloutScan, len(blobs))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, d := range blobs {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf := blobBuffers.Get().(*bytes.Buffer)
			defer blobBuffers.Put(buf)
			if err := l.ReadBlobInto(d, buf); err != nil {
				return fmt.Errorf("read trajectories of %s: %w", run, err)
			}
			sc := scanScratches.Get().(*scanScratch)
			part := &rolloutScan{Tasks: map[string]*taskMessages{}, scanScratch: *sc}
			defer func() {
				*sc, part.scanScratch = part.scanScratch, scanScratch{}
				scanScratches.Put(sc)
			}()
			for _, r := range byBlob[d] {
				if err := part.add(buf.Bytes(), r); err != nil {
					return fmt.Errorf("read trajectories of %s: entry %d: %w", run, r.Seq, err)
				}
			}
			parts[i] = part
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := &rolloutScan{Tasks: map[string]*taskMessages{}}
	for _, p := range parts {
		out.merge(p)
	}
	return out, nil
}

// scanScratch is what a scan decodes into and reuses from one message,
// line and blob to the next (scanScratches keeps it between blobs):
// buf, content and msgs an unescaped messages array, its contents and its
// messages as spans of content; requests and statuses a line's turns.
type scanScratch struct {
	buf, content []byte
	msgs         []rawMessage
	requests     [][]byte
	statuses     []string
}

var scanScratches = sync.Pool{New: func() any { return new(scanScratch) }}

// blobBuffers are the buffers trajectories blobs are read into, kept from
// one blob to the next: a gate reads hundreds of megabytes of them, and a
// fresh buffer each time is cleared and collected again. A scan keeps no
// reference into a blob's bytes once it has read its episodes.
var blobBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// add reads the episode r names in its blob.
func (s *rolloutScan) add(blob []byte, r rollout.Recorded) error {
	end := r.Offset + r.Length
	if r.Offset < 0 || r.Length < 0 || end > int64(len(blob)) {
		return fmt.Errorf("episode %s#%d lies outside its blob", r.TaskID, r.Sample)
	}
	line := blob[r.Offset:end]
	// requests are the bodies, or with quoted, their JSON string tokens as
	// the line holds them, decoded only when read.
	requests, statuses, quoted := scanEpisodeLine(line, r, s.requests[:0], s.statuses[:0])
	s.requests, s.statuses = requests, statuses
	if !quoted {
		var ep episodeView
		if err := json.Unmarshal(line, &ep); err != nil {
			return fmt.Errorf("line %d: %w", r.Line, err)
		}
		if ep.TaskID != r.TaskID || ep.Sample != r.Sample {
			return fmt.Errorf("line %d holds %s#%d, the entry says %s#%d", r.Line, ep.TaskID, ep.Sample, r.TaskID, r.Sample)
		}
		requests, statuses = nil, nil
		for _, t := range ep.Turns {
			requests = append(requests, t.Request)
			statuses = append(statuses, t.SQLStatus)
		}
	}
	s.Episodes++
	timedOut := false
	for _, st := range statuses {
		switch st {
		case "", "not_run":
		case "timeout":
			s.SQLRuns++
			s.Timeouts++
			timedOut = true
		default:
			s.SQLRuns++
		}
	}
	if timedOut {
		s.TimeoutSeqs = append(s.TimeoutSeqs, r.Seq)
	}
	msgEnd := messagesEnd
	if quoted {
		msgEnd = quotedMessagesEnd
	}
	tm := s.task(r.TaskID)
	see := func(msgs []rollout.Message) {
		for _, m := range msgs {
			tm.see(m.Role, m.Content).add(r.Sample, r.Seq)
		}
	}
	if quoted && tm.opening == nil && len(requests) > 0 {
		if k := bytes.Index(requests[0], quotedMessagesEnd); k > 0 {
			var msgs []rollout.Message
			if s.quotedMessages(requests[0][:k]) {
				for _, m := range s.msgs {
					if m.role != "assistant" {
						msgs = append(msgs, rollout.Message{Role: m.role, Content: string(s.content[m.start:m.end])})
					}
				}
			} else {
				body, err := s.unquote(requests[0])
				if err != nil {
					return fmt.Errorf("line %d: turn 0: request: %w", r.Line, err)
				}
				msgs = policyMessages(body)
			}
			tm.opening, tm.openingMsgs = bytes.Clone(requests[0][:k]), msgs
		}
	}
	for i, req := range requests {
		// A request whose messages all open the next request's is read
		// there: the conversation is resent whole every turn. JSON string
		// escaping maps each character on its own, so the test holds on
		// the quoted tokens too.
		if i+1 < len(requests) && messagesPrefix(req, requests[i+1], msgEnd) {
			continue
		}
		if !quoted {
			see(policyMessages(req))
			continue
		}
		if s.afterOpening(req, tm) {
			if tm.openingSeen == nil {
				for _, m := range tm.openingMsgs {
					tm.openingSeen = append(tm.openingSeen, tm.see(m.Role, m.Content))
				}
			}
			for _, m := range tm.openingSeen {
				m.add(r.Sample, r.Seq)
			}
			for _, m := range s.msgs {
				if m.role != "assistant" {
					tm.seeBytes(m.role, s.content[m.start:m.end]).add(r.Sample, r.Seq)
				}
			}
			continue
		}
		body, err := s.unquote(req)
		if err != nil {
			return fmt.Errorf("line %d: turn %d: request: %w", r.Line, i, err)
		}
		see(policyMessages(body))
	}
	return nil
}

// afterOpening decodes into s.msgs the messages of a quoted request that
// follow the task's opening messages; it is false when the request does
// not start with them.
func (s *rolloutScan) afterOpening(req []byte, tm *taskMessages) bool {
	if tm.opening == nil || !bytes.HasPrefix(req, tm.opening) {
		return false
	}
	rest := req[len(tm.opening):]
	j := bytes.Index(rest, quotedMessagesEnd)
	switch {
	case j == 0:
		s.msgs = s.msgs[:0]
		return true
	case j < 0 || rest[0] != ',':
		return false
	}
	// ",{...},{...}" quoted: decode it as the array [{...},{...}].
	return s.decodeMessages(appendUnescaped(append(s.buf[:0], '['), rest[1:j]))
}

// quotedMessages decodes into s.msgs the messages of a quoted request
// cut where its messages end; it is false when the request does not hold
// a messages array as rollout writes it. Inside the quoted request an
// inner string's quotes are written \\\", so `\"messages\":[` is the key
// itself.
func (s *rolloutScan) quotedMessages(req []byte) bool {
	i := bytes.Index(req, quotedMessagesKey)
	if i < 0 {
		return false
	}
	return s.decodeMessages(appendUnescaped(s.buf[:0], req[i+len(quotedMessagesKey)-1:]))
}

// decodeMessages decodes arr, an unescaped messages array that lacks its
// closing bracket, into s.msgs and s.content, keeping arr as the scan's
// scratch buffer; it is false when unescaping failed (ok is false) or arr
// is no array.
func (s *rolloutScan) decodeMessages(arr []byte, ok bool) bool {
	s.buf = arr
	if !ok {
		return false
	}
	s.buf = append(arr, ']')
	var err error
	s.content, s.msgs, err = parseMessages(s.buf, s.content[:0], s.msgs[:0])
	return err == nil
}

// errBadString is unquote's error for a token that is not a JSON string.
var errBadString = errors.New("not a valid JSON string")

// unquote decodes a JSON string token into a new slice.
func (s *rolloutScan) unquote(tok []byte) ([]byte, error) {
	out, ok := appendUnquoted(nil, tok)
	if !ok {
		return nil, errBadString
	}
	return out, nil
}

// Byte patterns of an episode line as rollout writes it (encoding/json,
// fields in struct order). Inside a JSON string every quote is escaped,
// so an unescaped `"request":` is the key of a turn's request body.
var (
	taskIDKey    = []byte(`{"task_id":`)
	sampleKey    = []byte(`,"sample":`)
	requestKey   = []byte(`"request":`)
	sqlStatusKey = []byte(`"sql_status":"`)
	messagesEnd  = []byte(`],"max_tokens":`)
	// quotedMessagesEnd is messagesEnd inside a JSON string, and
	// quotedMessagesKey the key that opens the messages.
	quotedMessagesEnd = []byte(`],\"max_tokens\":`)
	quotedMessagesKey = []byte(`\"messages\":[`)
)

// scanEpisodeLine finds the request bodies (as JSON string tokens) and SQL
// statuses of an episode line without decoding the rest of it; ok is false
// when the line is not laid out as rollout writes it (a base64 body,
// another order), and the caller decodes it whole.
// The requests and statuses are appended to the slices given.
func scanEpisodeLine(line []byte, r rollout.Recorded, requests [][]byte, statuses []string) ([][]byte, []string, bool) {
	if !bytes.HasPrefix(line, taskIDKey) {
		return nil, nil, false
	}
	rest := line[len(taskIDKey):]
	tok, n := jsonStringToken(rest)
	if id, ok := appendUnquoted(nil, tok); n == 0 || !ok || string(id) != r.TaskID {
		return nil, nil, false
	}
	rest = rest[n:]
	sample := strconv.AppendInt(slices.Clip(sampleKey), int64(r.Sample), 10)
	if !bytes.HasPrefix(rest, sample) || len(rest) == len(sample) || rest[len(sample)] != ',' {
		return nil, nil, false
	}
	next := bytes.Index(rest, requestKey)
	for next >= 0 {
		// A request that is not a string is a base64 body. A request
		// resends the conversation so far: where it opens with the
		// previous request's messages, its end is looked for after them,
		// so an episode's requests are scanned in linear time.
		body, from := rest[next+len(requestKey):], 0
		if len(requests) > 0 {
			prev := requests[len(requests)-1]
			if k := bytes.Index(prev, quotedMessagesEnd); k > 0 && bytes.HasPrefix(body, prev[:k]) {
				from = k
			}
		}
		tok, n := jsonStringTokenFrom(body, from)
		if n == 0 {
			return nil, nil, false
		}
		requests = append(requests, tok)
		rest = rest[next+len(requestKey)+n:]
		status := ""
		next = bytes.Index(rest, requestKey)
		// The status is the turn's: one whose key starts before the next
		// request's key.
		turn := rest
		if next >= 0 {
			turn = rest[:min(len(rest), next+len(sqlStatusKey)-1)]
		}
		if j := bytes.Index(turn, sqlStatusKey); j >= 0 {
			tok, n := jsonStringToken(rest[j+len(sqlStatusKey)-1:])
			st, ok := appendUnquoted(nil, tok)
			if n == 0 || !ok {
				return nil, nil, false
			}
			status = string(st)
		}
		statuses = append(statuses, status)
	}
	return requests, statuses, true
}

// jsonStringToken returns the JSON string token that b starts with,
// quotes included, and its length; 0 when b does not start with one.
func jsonStringToken(b []byte) ([]byte, int) { return jsonStringTokenFrom(b, 0) }

// jsonStringTokenFrom is jsonStringToken for a b whose token is known not
// to end before b[from].
func jsonStringTokenFrom(b []byte, from int) ([]byte, int) {
	if len(b) == 0 || b[0] != '"' {
		return nil, 0
	}
	for i := max(from, 1); i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return nil, 0
		}
		i += q
		// The quote closes the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for j := i - 1; j > 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return b[:i+1], i + 1
		}
		i++
	}
	return nil, 0
}

// messagesPrefix reports whether the messages of request body a open the
// messages of b, compared as bytes; end is where a's messages end.
func messagesPrefix(a, b, end []byte) bool {
	i := bytes.Index(a, end)
	return i > 0 && bytes.HasPrefix(b, a[:i])
}

func (s *rolloutScan) task(id string) *taskMessages {
	tm := s.Tasks[id]
	if tm == nil {
		tm = &taskMessages{index: map[string]map[string]*seenMessage{}}
		s.Tasks[id] = tm
	}
	return tm
}

// see returns the entry of a message, added when it is new.
func (tm *taskMessages) see(role, content string) *seenMessage {
	if m := tm.index[role][content]; m != nil {
		return m
	}
	return tm.added(role, content)
}

// seeBytes is see for content held in a scratch buffer: looking it up
// copies nothing, so a message seen before costs no allocation.
func (tm *taskMessages) seeBytes(role string, content []byte) *seenMessage {
	if m := tm.index[role][string(content)]; m != nil {
		return m
	}
	return tm.added(role, string(content))
}

// added adds a message not seen before.
func (tm *taskMessages) added(role, content string) *seenMessage {
	m := &seenMessage{Role: role, Content: content}
	byContent := tm.index[role]
	if byContent == nil {
		byContent = map[string]*seenMessage{}
		tm.index[role] = byContent
	}
	byContent[content] = m
	tm.Messages = append(tm.Messages, m)
	return m
}

// add records that an episode was sent the message.
func (m *seenMessage) add(sample int, seq int64) {
	m.Samples = appendNew(m.Samples, sample)
	m.Seqs = appendNew(m.Seqs, seq)
}

// appendNew appends x to xs unless it is already xs's last.
func appendNew[T comparable](xs []T, x T) []T {
	if len(xs) == 0 || xs[len(xs)-1] != x {
		xs = append(xs, x)
	}
	return xs
}

// merge adds another part's episodes, in order.
func (s *rolloutScan) merge(p *rolloutScan) {
	s.Episodes += p.Episodes
	s.SQLRuns += p.SQLRuns
	s.Timeouts += p.Timeouts
	s.TimeoutSeqs = append(s.TimeoutSeqs, p.TimeoutSeqs...)
	for id, ptm := range p.Tasks {
		tm := s.task(id)
		for _, m := range ptm.Messages {
			to := tm.see(m.Role, m.Content)
			for _, smp := range m.Samples {
				to.Samples = appendNew(to.Samples, smp)
			}
			for _, q := range m.Seqs {
				to.Seqs = appendNew(to.Seqs, q)
			}
		}
	}
}

// policyMessages returns the messages of a request body the policy reads
// as input: every one but its own earlier replies. A body that is not a
// chat request is returned whole, as one message.
func policyMessages(body []byte) []rollout.Message {
	var req struct {
		Messages []rollout.Message `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return []rollout.Message{{Role: "body", Content: string(body)}}
	}
	return policyOnly(req.Messages)
}

// policyOnly drops the policy's own replies from msgs, in place.
func policyOnly(msgs []rollout.Message) []rollout.Message {
	out := msgs[:0]
	for _, m := range msgs {
		if m.Role != "assistant" {
			out = append(out, m)
		}
	}
	return out
}
