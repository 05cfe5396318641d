package sqlenv

import (
	"fmt"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's heap limits, which bound the memory a statement can take inside
// SQLite (sorts, distinct sets, strings being built) whatever the caps on
// its result. They are process-wide, as SQLite keeps one heap: they hold
// for every connection in the process, the ledger's included, from the
// first NewExecutor on.
const (
	// HeapSoftLimit is where SQLite starts to reuse page-cache memory,
	// every connection's, instead of allocating more.
	HeapSoftLimit = 64 << 20
	// HeapHardLimit is the most SQLite allocates: past it an allocation
	// fails and so does the statement that needed it, with ErrOutOfMemory.
	HeapHardLimit = 128 << 20
)

// init turns on SQLite's memory accounting, without which it enforces no
// heap limit: modernc.org/sqlite is built with SQLITE_DEFAULT_MEMSTATUS=0,
// and the setting can only change before SQLite initialises, which no
// package does before this one's init runs.
func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := tls.Alloc(8)
	defer tls.Free(8)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, libc.VaList(va, int32(1))); rc != sqlite3.SQLITE_OK {
		panic(fmt.Sprintf("sqlenv: enable SQLite memory accounting: result code %d (SQLite was initialised before package sqlenv)", rc))
	}
}

var heapOnce sync.Once

// limitHeap sets HeapSoftLimit and HeapHardLimit, once per process.
func limitHeap() {
	heapOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		sqlite3.Xsqlite3_hard_heap_limit64(tls, HeapHardLimit)
		sqlite3.Xsqlite3_soft_heap_limit64(tls, HeapSoftLimit)
	})
}
