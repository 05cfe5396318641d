package grade

import (
	"context"
	"errors"
	"sync"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// GoldKey names a gold denotation: the database's content digest and the
// SQL as executed (after Metric.Query), so the bird and strict rules share
// entries and the spider rule, which executes a rewritten query, has its
// own.
type GoldKey struct {
	DB  ledger.Digest
	SQL string
}

// GoldCache keeps gold denotations, so a gold query runs once however many
// predictions are graded against it. It is safe for concurrent use;
// concurrent requests for one key execute it once. A denotation that
// ended by timeout or cancellation is not kept: it says nothing about the
// gold.
type GoldCache struct {
	mu sync.Mutex
	m  map[GoldKey]*goldEntry
}

type goldEntry struct {
	ready chan struct{} // closed when d is set
	d     Denotation
	keep  bool
}

// NewGoldCache returns an empty cache.
func NewGoldCache() *GoldCache { return &GoldCache{m: make(map[GoldKey]*goldEntry)} }

// Get returns the denotation kept for key.
func (c *GoldCache) Get(key GoldKey) (Denotation, bool) {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e == nil {
		return Denotation{}, false
	}
	<-e.ready
	return e.d, e.keep
}

// Put keeps d for key, replacing what was there; a caller restoring
// denotations recorded earlier (from the ledger) uses it.
func (c *GoldCache) Put(key GoldKey, d Denotation) {
	e := &goldEntry{ready: make(chan struct{}), d: d, keep: true}
	close(e.ready)
	c.mu.Lock()
	c.m[key] = e
	c.mu.Unlock()
}

// Len returns the number of denotations kept or being computed.
func (c *GoldCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Do returns the denotation kept for key, or runs exec, keeps its result
// unless it was cut short by time, and returns it.
func (c *GoldCache) Do(key GoldKey, exec func() Denotation) Denotation {
	c.mu.Lock()
	if e := c.m[key]; e != nil {
		c.mu.Unlock()
		<-e.ready
		if e.keep {
			return e.d
		}
		return c.Do(key, exec)
	}
	e := &goldEntry{ready: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()

	e.d = exec()
	e.keep = !errors.Is(e.d.Err, sqlenv.ErrTimeout) && !errors.Is(e.d.Err, context.Canceled) &&
		!errors.Is(e.d.Err, context.DeadlineExceeded)
	if !e.keep {
		c.mu.Lock()
		if c.m[key] == e {
			delete(c.m, key)
		}
		c.mu.Unlock()
	}
	close(e.ready)
	return e.d
}
