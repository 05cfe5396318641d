package grade

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

const world1 = "../../testdata/spider/database/world_1/world_1.sqlite"

// hostileMaxRSS is the peak resident set a grading of hostile predictions
// may reach under the default caps, whole process included.
const hostileMaxRSS = 256 << 20

// hostilePredictions exhaust time or memory on world_1 (city: 4079 rows,
// country: 239, countrylanguage: 984).
var hostilePredictions = []struct{ name, sql string }{
	{"recursive CTE without end", "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"},
	{"recursive CTE without end, distinct", "WITH RECURSIVE r(x) AS (SELECT 1 UNION SELECT x + 1 FROM r) SELECT max(x) FROM r"},
	{"4-way cartesian join", "SELECT * FROM city, country, countrylanguage, city AS c2"},
	{"ORDER BY random() over a cartesian", "SELECT * FROM city, country ORDER BY random()"},
	{"group_concat over a cartesian", "SELECT group_concat(a.Name || b.Name) FROM city a, city b"},
	{"string doubling by recursion", "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT s FROM r"},
	{"replace grows a string", "SELECT replace(hex(zeroblob(30000000)), '00', 'abab')"},
	{"a large zeroblob per row", "SELECT zeroblob(60000000) FROM city"},
	{"a large randomblob per row", "SELECT randomblob(60000000) FROM city"},
	{"randomblob of 2 GB", "SELECT randomblob(2000000000)"},
}

// TestHostilePredictionsBounded grades each hostile prediction against a
// sound gold under the default caps, with a 1 s deadline so the test stays
// short. Each must count as incorrect (a pred-error outcome, as the
// official evaluators count an error or a timeout), grading must go on
// afterwards, and the whole process's peak RSS must stay under
// hostileMaxRSS. Peak RSS is per process, so the grading runs in a child:
// the test binary running this test alone with RLGATE_HOSTILE_CHILD set.
func TestHostilePredictionsBounded(t *testing.T) {
	if os.Getenv("RLGATE_HOSTILE_CHILD") == "1" {
		hostileGrade(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostilePredictionsBounded$", "-test.v")
	cmd.Env = append(os.Environ(), "RLGATE_HOSTILE_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child grading: %v", err)
	}
	var rss int64 = -1
	for s := bufio.NewScanner(strings.NewReader(string(out))); s.Scan(); {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "peak RSS bytes: "); ok {
			rss, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	switch {
	case rss < 0:
		t.Fatal("the child did not report its peak RSS")
	case rss == 0:
		t.Fatal("getrusage gave no peak RSS here: it cannot be measured")
	case rss > hostileMaxRSS:
		t.Errorf("peak RSS %d MiB grading hostile predictions, want under %d MiB", rss>>20, hostileMaxRSS>>20)
	}
}

// hostileGrade is the child's half of TestHostilePredictionsBounded.
func hostileGrade(t *testing.T) {
	const deadline = time.Second
	g := newTestGrader(t, Options{Options: sqlenv.Options{Timeout: deadline}, BirdBudget: deadline})
	const gold = "SELECT count(*) FROM city"
	for _, h := range hostilePredictions {
		start := time.Now()
		o, err := g.Grade(context.Background(), MetricSpider, world1, h.sql, gold)
		if err != nil {
			t.Fatalf("%s: grading stopped: %v", h.name, err)
		}
		fmt.Printf("%-40s %6s  peak RSS %4d MiB  %s: %s\n", h.name, time.Since(start).Round(time.Millisecond), peakRSS()>>20, o.Verdict, o.Detail)
		if o.Verdict != VerdictPredError || o.Correct {
			t.Errorf("%s: verdict %s (%s), want %s", h.name, o.Verdict, o.Detail, VerdictPredError)
		}
	}
	if o, err := g.Grade(context.Background(), MetricSpider, world1, "SELECT count(ID) FROM city", gold); err != nil || !o.Correct {
		t.Errorf("a sound prediction after the hostile ones: %+v, %v", o, err)
	}
	fmt.Printf("peak RSS bytes: %d\n", peakRSS())
}

// peakRSS returns the process's peak resident set in bytes
// (getrusage's ru_maxrss, which Linux gives in KiB).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10
}
