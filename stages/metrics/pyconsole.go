package metrics

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// skyrlDecoder reads SkyRL's console logger (trainer.logger=console), which
// logs each step through loguru as
//
//	2025-06-01 12:00:00.000 | INFO     | skyrl.train.utils.tracking:log:205 - Step 3:
//	{'policy/grad_norm': '0.1234',
//	 'trainer/global_step': 3}
//
// that is "Step N: " (with a trailing space) and, from the next line on, pprint.pformat of the
// step's metrics with every float written as a string with four decimals.
// A record is complete once the dict's braces balance; Ray's prefix may
// start every line of it. A header whose next line does not open a dict
// is ignored.
type skyrlDecoder struct {
	state skyrlState
	from  Cursor // where the open record's header line starts
	step  int64
	body  []byte // the dict's lines so far
	depth int    // open braces in body
	clean []byte
	dict  pyDict
}

type skyrlState int

const (
	skyrlIdle   skyrlState = iota
	skyrlHeader            // "Step N: " seen, the dict not begun
	skyrlBody              // inside the dict
)

func (d *skyrlDecoder) line(sk *sink, b []byte, at Cursor) error {
	d.clean = stripANSI(d.clean[:0], bytes.TrimSuffix(b, []byte{'\r'}))
	text := trimRayDecoration(d.clean)
	if d.state == skyrlHeader {
		if len(text) > 0 && text[0] == '{' {
			d.state, d.body, d.depth = skyrlBody, d.body[:0], 0
		} else {
			d.state = skyrlIdle
			sk.stats.Ignored++ // the header line, without its dict
		}
	}
	if d.state == skyrlBody {
		d.body = append(append(d.body, text...), '\n')
		d.depth += braceDelta(text)
		if d.depth > 0 {
			return nil
		}
		if !d.commit(sk) {
			return fmt.Errorf("the metrics dict of step %d, from line %d, does not parse", d.step, d.from.Line+2)
		}
		return nil
	}
	if step, ok := cutSkyRLHeader(text); ok {
		d.state, d.from, d.step = skyrlHeader, at, step
		return nil
	}
	sk.stats.Ignored++
	return nil
}

// commit adds the dict's complete items as the step's record and reports
// whether the dict closed; one that did not is dropped.
func (d *skyrlDecoder) commit(sk *sink) bool {
	d.state = skyrlIdle
	sk.begin()
	if !d.dict.read(sk, d.body) && d.depth <= 0 {
		sk.drop()
		return false
	}
	dropRoundedLR(sk)
	sk.commit(d.step)
	return true
}

// skyrlLRKeys are SkyRL's learning-rate keys.
var skyrlLRKeys = Keys(TrainerSkyRL, LearningRate)

// dropRoundedLR removes from the open record a learning rate that SkyRL's
// console printed as '0.0000': four decimals say only that it is below
// 5e-5, where every RL learning rate lies, so recording 0 would claim an
// untrained run. The value is counted as skipped, and the training audit
// falls back to the run's lr parameter. Any other value printed as zero is
// kept: a reward or KL below 5e-5 is zero at the precision they are read.
func dropRoundedLR(sk *sink) {
	rec := sk.out[sk.start:]
	kept := rec[:0]
	for _, p := range rec {
		if p.Value == 0 && slices.Contains(skyrlLRKeys, p.Key) {
			sk.stats.Skipped++
			continue
		}
		kept = append(kept, p)
	}
	sk.out = sk.out[:sk.start+len(kept)]
}

func (d *skyrlDecoder) pending() (Cursor, bool) { return d.from, d.state != skyrlIdle }

// flush commits the items of a dict the writer left unfinished.
func (d *skyrlDecoder) flush(sk *sink) {
	switch d.state {
	case skyrlBody:
		d.commit(sk)
	case skyrlHeader:
		sk.stats.Ignored++
	}
	d.state = skyrlIdle
}

// drop forgets an open record; its lines are read again next time. No
// record is begun in the sink before the dict is complete.
func (d *skyrlDecoder) drop(*sink) { d.state = skyrlIdle }

// cutSkyRLHeader recognises loguru's "... - Step N: " line (or a bare
// "Step N:") and returns N.
func cutSkyRLHeader(text []byte) (int64, bool) {
	rest, ok := bytes.CutSuffix(bytes.TrimRight(text, " "), []byte{':'})
	if !ok {
		return 0, false
	}
	i := bytes.LastIndex(rest, []byte("Step "))
	if i < 0 || i > 0 && !bytes.HasSuffix(rest[:i], []byte(" - ")) {
		return 0, false
	}
	step, err := strconv.ParseInt(string(rest[i+len("Step "):]), 10, 64)
	return step, err == nil
}

// braceDelta counts the braces a line of a Python literal opens minus those
// it closes, outside string literals (which never span lines in a repr).
func braceDelta(b []byte) int {
	n := 0
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '{':
			n++
		case c == '}':
			n--
		}
	}
	return n
}

// openrlhfDecoder reads OpenRLHF's PPO trainer log, one line per step:
//
//	INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 3: {'policy_loss': 0.01, 'actor_lr': 1e-06, ...}
//
// (the asynchronous trainer writes it without the sparkle), the metrics a
// Python dict repr. Any other line is ignored.
type openrlhfDecoder struct {
	clean []byte
	dict  pyDict
}

func (d *openrlhfDecoder) line(sk *sink, b []byte, _ Cursor) error {
	d.clean = stripANSI(d.clean[:0], bytes.TrimSuffix(b, []byte{'\r'}))
	step, dict, ok := cutOpenRLHFStep(trimRayDecoration(d.clean))
	if !ok {
		sk.stats.Ignored++
		return nil
	}
	// A line cut short (the trainer was killed while writing it) keeps
	// its complete items.
	sk.begin()
	d.dict.read(sk, dict)
	sk.commit(step)
	return nil
}

// A step record is one line, so nothing is ever pending.
func (d *openrlhfDecoder) pending() (Cursor, bool) { return Cursor{}, false }
func (d *openrlhfDecoder) flush(*sink)             {}
func (d *openrlhfDecoder) drop(*sink)              {}

// cutOpenRLHFStep recognises "Global step N: {" in a log line and returns N
// and the dict from its opening brace.
func cutOpenRLHFStep(text []byte) (int64, []byte, bool) {
	_, rest, ok := bytes.Cut(text, []byte("Global step "))
	if !ok {
		return 0, nil, false
	}
	num, _, ok := bytes.Cut(rest, []byte(": {"))
	if !ok {
		return 0, nil, false
	}
	step, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return step, rest[len(num)+2:], true
}
