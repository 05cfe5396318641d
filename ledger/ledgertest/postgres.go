//go:build postgres

package ledgertest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Postgres starts a throwaway PostgreSQL cluster (Debian's postgresql
// package: initdb and pg_ctl) in a temporary directory, as a non-root user
// (nobody, when the test runs as root), listening on a free loopback port,
// and stops and removes it when the test ends. It returns a PostgreSQL
// ledger URL for the cluster's empty postgres database, with a fresh local
// directory for blobs.
func Postgres(t testing.TB) string {
	t.Helper()
	return StartPostgres(t).URL
}

// PGCluster is a throwaway PostgreSQL cluster that a test may stop and
// start again, as a server that goes away under its clients.
type PGCluster struct {
	// URL is a PostgreSQL ledger URL for the cluster's postgres database,
	// with a fresh local directory for blobs.
	URL  string
	t    testing.TB
	pg   func(name string, args ...string) error
	ctl  []string // pg_ctl's arguments before its action
	data string
}

// StartPostgres is Postgres, returning the cluster.
func StartPostgres(t testing.TB) *PGCluster {
	t.Helper()
	bin := pgBinDir(t)
	root, err := os.MkdirTemp("", "rlgate-pg-") // under /tmp, so that nobody can reach it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		if err := os.Chown(root, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	pg := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "HOME="+root, "LC_ALL=C")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
		}
		return nil
	}
	data := filepath.Join(root, "data")
	if err := pg("initdb", "-D", data, "-U", "rlgate", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatal(err)
	}
	port := pgFreePort(t)
	c := &PGCluster{t: t, pg: pg, data: data, ctl: []string{"-D", data, "-l", filepath.Join(root, "log"), "-w", "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", port, root)}}
	c.Start()
	t.Cleanup(func() { pg("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") })
	u := url.URL{Scheme: "postgres", User: url.User("rlgate"), Host: "127.0.0.1:" + strconv.Itoa(port), Path: "/postgres",
		RawQuery: url.Values{"sslmode": {"disable"}, "blobs": {filepath.Join(t.TempDir(), "local")}}.Encode()}
	c.URL = u.String()
	return c
}

// Start starts the stopped cluster again, on the same port, and waits
// until it accepts connections (after crash recovery, when it was stopped
// immediately).
func (c *PGCluster) Start() {
	c.t.Helper()
	if err := c.pg("pg_ctl", append(c.ctl, "start")...); err != nil {
		c.t.Fatal(err)
	}
}

// RequirePassword gives the cluster's user (rlgate) a password and
// restarts the server asking for it on TCP connections (scram-sha-256), as
// a shared server does. URL names no password; a test adds one to it.
func (c *PGCluster) RequirePassword(password string) {
	c.t.Helper()
	u, err := url.Parse(c.URL)
	if err != nil {
		c.t.Fatal(err)
	}
	q := u.Query()
	q.Del("blobs")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, u.String())
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER USER rlgate PASSWORD '"+strings.ReplaceAll(password, "'", "''")+"'").ReadAll(); err != nil {
		c.t.Fatal(err)
	}
	hba := "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(c.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := c.pg("pg_ctl", append(c.ctl, "-m", "fast", "restart")...); err != nil {
		c.t.Fatal(err)
	}
}

// PostmasterPID returns the running server's process id, for a test whose
// command stops the server itself (kill -QUIT is an immediate stop).
func (c *PGCluster) PostmasterPID() int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.data, "postmaster.pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(line)
	if err != nil {
		c.t.Fatalf("postmaster.pid: %v", err)
	}
	return pid
}

// StopImmediately stops the cluster as a crash would (pg_ctl stop -m
// immediate): every connection is cut, with no checkpoint.
func (c *PGCluster) StopImmediately() {
	c.t.Helper()
	if err := c.pg("pg_ctl", append(c.ctl, "-m", "immediate", "stop")...); err != nil {
		c.t.Fatal(err)
	}
}

// pgBinDir finds initdb: on PATH, else in Debian's versioned directory.
// PGDump returns pg_dump's plain SQL dump (schema and data) of the
// database of a ledger URL from Postgres, as an operator backs it up.
func PGDump(t testing.TB, ledgerURL string) []byte {
	t.Helper()
	u, err := url.Parse(ledgerURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("blobs")
	u.RawQuery = q.Encode()
	out, err := exec.Command(filepath.Join(pgBinDir(t), "pg_dump"), "--dbname", u.String()).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return out
}

func pgBinDir(t testing.TB) string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real)
		}
	}
	if ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(ms) > 0 {
		return filepath.Dir(ms[len(ms)-1])
	}
	t.Fatal("no initdb: the postgres tests need PostgreSQL (apt-get install postgresql)")
	return ""
}

func pgFreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
