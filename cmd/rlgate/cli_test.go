package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/digest"
	"github.com/urfave/cli/v3"
)

// rlgate runs one command line in-process and returns its exit code and
// output, as a user at a terminal would see them.
func rlgate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"rlgate"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// headOf returns the head of the ledger in dir, opened read-only.
func headOf(t *testing.T, dir string) ledger.Head {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, err := l.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestLedgerCommandsEndToEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(ledger.EnvLedger, dir) // every command honours RLGATE_LEDGER

	if code, _, errOut := rlgate(t, "log"); code != exitError || !strings.Contains(errOut, "Try: rlgate init") {
		t.Errorf("log before init: exit %d, %q", code, errOut)
	}
	if code, out, _ := rlgate(t, "init"); code != exitOK || !strings.Contains(out, "created ledger") {
		t.Fatalf("init: exit %d, %q", code, out)
	}
	if code, _, errOut := rlgate(t, "init"); code != exitError || !strings.Contains(errOut, "already exists") {
		t.Errorf("second init: exit %d, %q", code, errOut)
	}

	code, out, _ := rlgate(t, "hash", "--record", "--json", "--name", "spider-dev-dbs", "../../testdata/spider/database")
	if code != exitOK {
		t.Fatalf("hash --record: exit %d", code)
	}
	var hashed []digest.TreeDigest
	if err := json.Unmarshal([]byte(out), &hashed); err != nil {
		t.Fatal(err)
	}
	if len(hashed) != 1 || hashed[0].Seq != 2 || hashed[0].Files != 19 || hashed[0].Name != "spider-dev-dbs" {
		t.Fatalf("hash result = %+v", hashed)
	}

	code, out, _ = rlgate(t, "log", "--kind", "artifact", "--json")
	var entries []ledger.Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || code != exitOK || len(entries) != 1 {
		t.Fatalf("log --kind artifact: exit %d, %d entries, %v", code, len(entries), err)
	}
	if !strings.Contains(string(entries[0].Body), hashed[0].Digest.String()) {
		t.Errorf("dataset entry body %s does not name digest %s", entries[0].Body, hashed[0].Digest)
	}

	for _, which := range []string{"2", entries[0].Hash.Hex()[:8]} {
		if code, out, _ := rlgate(t, "show", which); code != exitOK || !strings.Contains(out, "spider-dev-dbs") {
			t.Errorf("show %s: exit %d, %q", which, code, out)
		}
	}
	_, headOut, _ := rlgate(t, "head")
	head := strings.TrimSpace(headOut)
	if code, out, _ := rlgate(t, "verify", "--against", head); code != exitOK || !strings.Contains(out, "0 errors") {
		t.Errorf("verify: exit %d, %q", code, out)
	}

	// Tamper with the dataset entry: verify must exit 3 and name the entry.
	db, err := sql.Open("sqlite", filepath.Join(dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE entries SET body = replace(body, 'spider-dev-dbs', 'spider-dev-dbz') WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, out, _ = rlgate(t, "verify", "--json")
	var rep ledger.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if code != exitCheckFailed || rep.OK() || rep.Findings[0].Seq != 2 {
		t.Errorf("verify after tampering: exit %d, report %+v", code, rep)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"no-such-command"},
		{"log", "--no-such-flag"},
		{"show"},
		{"hash"},
		{"hash", "--name", "x", "a", "b"},
		{"verify", "--against", "not-a-head"},
	} {
		if code, _, errOut := rlgate(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%q), want %d", args, code, errOut, exitUsage)
		}
	}
}

// TestEveryCommandHasHelp is a house rule: a user can learn every command
// from rlgate help, including what its exit codes mean.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		for _, sub := range c.Commands {
			if sub.Name == "help" {
				continue
			}
			// A command grouping others has only setUsageErrors' action.
			if sub.Usage == "" || (sub.Action != nil && len(sub.Commands) == 0 && !strings.Contains(sub.Description, "Exit codes")) {
				t.Errorf("command %q needs Usage and a Description that ends with the exit codes", sub.Name)
			}
			for _, f := range sub.Flags {
				if df, ok := f.(cli.DocGenerationFlag); ok && df.GetUsage() == "" {
					t.Errorf("flag %v of %q has no usage text", f.Names(), sub.Name)
				}
			}
			walk(sub)
		}
	}
	walk(newApp(nil, nil))
}
