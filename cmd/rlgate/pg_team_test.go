//go:build postgres

package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGTeamGrants applies docs/TEAM.md's roles and grants, statement by
// statement as written there, to a throwaway cluster holding the gate
// experiment's ledger: the writer records a gate verdict; the reader runs
// the gate as a dry run and writes and checks the report, and the server
// refuses its append, leaving the head where it was.
func TestPGTeamGrants(t *testing.T) {
	raw, err := os.ReadFile("../../docs/TEAM.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(raw), -1)
	if len(blocks) != 2 {
		t.Fatalf("docs/TEAM.md has %d sql blocks, want 2 (the superuser's, then the owner's)", len(blocks))
	}
	super, blobs := pgSplit(t, ledgertest.Postgres(t))
	as := func(role string) string {
		u, err := url.Parse(super)
		if err != nil {
			t.Fatal(err)
		}
		u.User, u.Path = url.User(role), "/rl_spider"
		return u.String()
	}
	apply := func(conn, sql string) {
		t.Helper()
		ctx := context.Background()
		c, err := pgconn.Connect(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		for _, stmt := range strings.Split(sql, ";\n") {
			if stmt = strings.TrimSpace(stmt); stmt == "" {
				continue
			}
			if _, err := c.Exec(ctx, stmt).ReadAll(); err != nil {
				t.Fatalf("docs/TEAM.md: %s: %v", stmt, err)
			}
		}
	}
	apply(super, blocks[0][1])
	x := buildGateExperiment(t)
	if code, out, errOut := rlgate(t, "--blobs", blobs, "ledger", "copy", "--from", x.ledger, "--to", as("rlgate_owner")); code != exitOK {
		t.Fatalf("ledger copy as the owner: exit %d: %s%s", code, out, errOut)
	}
	apply(as("rlgate_owner"), blocks[1][1])

	writer := []string{"--ledger", as("rlgate_writer"), "--blobs", blobs}
	if code, out, errOut := rlgate(t, append(writer, "gate", "--runs", x.runs, "--train", x.train)...); code != exitOK {
		t.Fatalf("gate as the writer: exit %d: %s%s", code, out, errOut)
	}
	reader := []string{"--ledger", as("rlgate_reader"), "--blobs", blobs}
	_, head, _ := rlgate(t, append(reader, "head")...)
	if code, out, errOut := rlgate(t, append(reader, "gate", "--dry-run", "--runs", x.runs, "--train", x.train)...); code != exitOK {
		t.Errorf("gate --dry-run as the reader: exit %d: %s%s", code, out, errOut)
	}
	report := filepath.Join(t.TempDir(), "report")
	if code, out, errOut := rlgate(t, append(reader, "report", "--out", report)...); code != exitOK {
		t.Errorf("report as the reader: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := rlgate(t, append(reader, "report", "--check", report)...); code != exitOK {
		t.Errorf("report --check as the reader: exit %d: %s%s", code, out, errOut)
	}
	code, _, errOut := rlgate(t, append(reader, "run", "--stage", "sft", "--run", "by-reader", "--gpu", "off", "--", "true")...)
	if code != exitError || !strings.Contains(errOut, "permission denied") {
		t.Errorf("run as the reader: exit %d, want 1 with the server's refusal: %s", code, errOut)
	}
	if _, now, _ := rlgate(t, append(reader, "head")...); now != head || head == "" {
		t.Errorf("the reader's refused append moved the head from %q to %q", head, now)
	}
}
