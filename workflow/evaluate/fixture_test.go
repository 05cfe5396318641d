package evaluate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/usage"
)

const (
	spiderSource = "../../testdata/spider"
	birdSource   = "../../testdata/bird"
)

// imported holds the Spider dev set imported once for the package: the
// tests only read it, and each plays into a ledger of its own.
var imported struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if imported.dir != "" {
		os.RemoveAll(imported.dir)
	}
	os.Exit(code)
}

// importInto imports a dataset through the import stage into out, as
// rlgate data import writes it (tasks, gold, manifest).
func importInto(out string, im *dataset.Imported, err error) error {
	if err != nil {
		return err
	}
	return im.WriteDir(out, false)
}

// spiderData returns the directory of the Spider dev set's import.
func spiderData(t *testing.T) string {
	t.Helper()
	imported.once.Do(func() {
		if imported.dir, imported.err = os.MkdirTemp("", "evaluate-spider-"); imported.err != nil {
			return
		}
		im, err := dataset.ImportSpider(context.Background(), dataset.SpiderOptions{Dev: spiderSource + "/dev.json", Gold: spiderSource + "/dev_gold.sql",
			Tables: spiderSource + "/tables.json", DBRoot: spiderSource + "/database"})
		imported.err = importInto(filepath.Join(imported.dir, "spider"), im, err)
	})
	if imported.err != nil {
		t.Fatal(imported.err)
	}
	return filepath.Join(imported.dir, "spider")
}

// birdData imports BIRD mini-dev under dir, for a test that may change the
// import, and returns its directory and manifest.
func birdData(t *testing.T, dir string) (string, *dataset.Manifest) {
	t.Helper()
	out := filepath.Join(dir, "bird")
	im, err := dataset.ImportBird(context.Background(), dataset.BirdOptions{Dev: birdSource + "/mini_dev_sqlite.json", DBRoot: birdSource + "/dev_databases"})
	if err := importInto(out, im, err); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

// newLedger initialises a ledger of the test's own and returns its
// directory.
func newLedger(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	l, err := ledger.Init(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return dir
}

// play is the PlayOptions of a test: the ledger, the tasks, one endpoint
// and a run, with the flags' defaults for the rest.
func play(ldir, tasks, endpoint, run string, limit int) PlayOptions {
	return PlayOptions{Dir: ldir, Tasks: tasks, Endpoints: []string{endpoint}, Model: "scripted", Run: run, Limit: limit,
		Concurrency: 8, RequestTimeout: rollout.DefaultClientOptions().RequestTimeout, MaxAttempts: rollout.DefaultClientOptions().MaxAttempts,
		FlushEvery: rollout.DefaultFlushEvery}
}

// withSamples sets the protocol's sampling.n, as --n does.
func withSamples(o PlayOptions, n int) PlayOptions {
	o.Sampling.N = &n
	return o
}

// openLedger opens ldir; the caller closes it.
func openLedger(t *testing.T, ldir string) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// runStatus is a run's row and its run.end body; ErrNotFound when no such
// run was started.
func runStatus(t *testing.T, ldir, run string) (ledger.Run, map[string]any, error) {
	t.Helper()
	l := openLedger(t, ldir)
	defer l.Close()
	r, err := l.RunStatus(context.Background(), run)
	if err != nil {
		return r, nil, err
	}
	var body map[string]any
	if r.EndedSeq != nil {
		e, err := l.EntryBySeq(context.Background(), *r.EndedSeq)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Fatal(err)
		}
	}
	return r, body, nil
}

// entryBody is the body of the entry at seq.
func entryBody(t *testing.T, ldir string, seq int64) string {
	t.Helper()
	l := openLedger(t, ldir)
	defer l.Close()
	e, err := l.EntryBySeq(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Body)
}

// noRunStarted fails the test when the ledger holds a run.start.
func noRunStarted(t *testing.T, ldir, what string) {
	t.Helper()
	l := openLedger(t, ldir)
	defer l.Close()
	runs, err := l.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 0 {
		t.Errorf("%s started %d runs, the first %s", what, len(runs), runs[0].Run)
	}
}

// isUsage reports whether err is a usage error, which rlgate exits 2 on.
func isUsage(err error) bool {
	var ue usage.Error
	return errors.As(err, &ue)
}

// lockedBuffer is progress written from the workers of a rollout.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// lastLine is the last line of an error message or of progress.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
