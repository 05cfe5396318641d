package rollout

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// progress reports a rollout as it goes: on a terminal, a bar redrawn in
// place; elsewhere, a plain line now and then.
type progress struct {
	w       io.Writer
	tty     bool
	every   time.Duration
	run     string
	total   int // episodes to play in this command
	start   time.Time
	done    atomic.Int64
	errored atomic.Int64 // episodes ended by http_error
	stop    chan struct{}
	stopped chan struct{}
}

func newProgress(w io.Writer, tty bool, every time.Duration, run string, total int) *progress {
	if every <= 0 {
		every = 10 * time.Second
		if tty {
			every = 200 * time.Millisecond
		}
	}
	p := &progress{w: w, tty: tty, every: every, run: run, total: total, start: time.Now(),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if w == nil {
		close(p.stopped)
		return p
	}
	go p.loop()
	return p
}

func (p *progress) episode(ep *Episode) {
	p.done.Add(1)
	if ep.StopReason == StopHTTPError {
		p.errored.Add(1)
	}
}

func (p *progress) loop() {
	defer close(p.stopped)
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			p.print(true)
			return
		case <-tick.C:
			p.print(false)
		}
	}
}

// finish prints the last state and stops the reports.
func (p *progress) finish() {
	if p.w != nil {
		close(p.stop)
	}
	<-p.stopped
}

func (p *progress) print(last bool) {
	done, errs := int(p.done.Load()), p.errored.Load()
	elapsed := time.Since(p.start)
	rate := float64(done) / max(elapsed.Seconds(), 1e-9)
	eta := "?"
	if rate > 0 {
		eta = time.Duration(float64(p.total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	status := fmt.Sprintf("%d/%d episodes  %.1f/s  ETA %s  errors %d", done, p.total, rate, eta, errs)
	if !p.tty {
		fmt.Fprintf(p.w, "rlgate: rollout %s: %s\n", p.run, status)
		return
	}
	const width = 30
	filled := width
	if p.total > 0 {
		filled = width * done / p.total
	}
	end := ""
	if last {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %s%s", p.run, strings.Repeat("#", filled), strings.Repeat(".", width-filled), status, end)
}
