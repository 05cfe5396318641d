// Package progress reports a long command's progress (a rollout's
// episodes, a grading's tasks): on a terminal, a bar redrawn in place;
// elsewhere, a plain line now and then, so logs stay readable.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bar reports the progress of a known number of items. Its methods are
// safe for concurrent use.
type Bar struct {
	w       io.Writer
	tty     bool
	every   time.Duration
	verb    string // what the command does: "rollout", "grade"
	label   string // what it does it to: the run
	unit    string // what it counts: "episodes", "tasks"
	total   int
	start   time.Time
	done    atomic.Int64
	failed  atomic.Int64
	stop    chan struct{}
	stopped chan struct{}
	mu      sync.Mutex // serialises writes to w
}

// Start begins reporting on w, or nowhere when w is nil: on a terminal
// (tty) every 200 ms, else every 10 s, unless every says otherwise.
func Start(w io.Writer, tty bool, every time.Duration, verb, label, unit string, total int) *Bar {
	if every <= 0 {
		every = 10 * time.Second
		if tty {
			every = 200 * time.Millisecond
		}
	}
	b := &Bar{w: w, tty: tty, every: every, verb: verb, label: label, unit: unit, total: total, start: time.Now(),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if w == nil {
		close(b.stopped)
		return b
	}
	go b.loop()
	return b
}

// Done counts one item; failed counts it among the errors as well.
func (b *Bar) Done(failed bool) {
	b.done.Add(1)
	if failed {
		b.failed.Add(1)
	}
}

func (b *Bar) loop() {
	defer close(b.stopped)
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			b.print(true)
			return
		case <-tick.C:
			b.print(false)
		}
	}
}

// Finish prints the last state and stops the reports.
func (b *Bar) Finish() {
	if b.w != nil {
		close(b.stop)
	}
	<-b.stopped
}

// Note prints a line of news (an endpoint drained) between reports: on a
// terminal it takes the bar's line, and the bar is drawn again below it.
func (b *Bar) Note(format string, args ...any) {
	if b.w == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty {
		fmt.Fprint(b.w, "\r\033[K")
	}
	fmt.Fprintf(b.w, "rlgate: "+format+"\n", args...)
}

func (b *Bar) print(last bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	done, errs := int(b.done.Load()), b.failed.Load()
	elapsed := time.Since(b.start)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(b.total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	status := fmt.Sprintf("%d/%d %s  %.1f/s  ETA %s  errors %d", done, b.total, b.unit, rate, eta, errs)
	if !b.tty {
		fmt.Fprintf(b.w, "rlgate: %s %s: %s\n", b.verb, b.label, status)
		return
	}
	const width = 30
	filled := width
	if b.total > 0 {
		filled = width * done / b.total
	}
	end := ""
	if last {
		end = "\n"
	}
	fmt.Fprintf(b.w, "\r\033[K%s [%s%s] %s%s", b.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), status, end)
}
