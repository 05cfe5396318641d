//go:build postgres && s3

package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestS3CLI: a PostgreSQL ledger with blobs in S3 through the CLI
// (--blobs s3://..., --s3-endpoint, --s3-region, --s3-path-style,
// --cache; or AWS_ENDPOINT_URL): init, a recorded stage whose output
// holds the S3 secret, verify; the secret is in no entry and no object;
// a missing bucket is refused at open; ledger copy PostgreSQL+S3 ->
// SQLite gives the same head and a clean verify.
func TestS3CLI(t *testing.T) {
	srv := ledgertest.S3(t)
	pgURL, _ := pgSplit(t, ledgertest.Postgres(t))
	cache := filepath.Join(t.TempDir(), "cache")
	s3 := []string{"--ledger", pgURL, "--blobs", "s3://" + srv.Bucket + "/cli", "--s3-endpoint", srv.Endpoint,
		"--s3-region", "us-east-1", "--s3-path-style", "--cache", cache}
	if code, out, errOut := rlgate(t, append(s3, "init")...); code != exitOK || !strings.Contains(out, "created ledger") {
		t.Fatalf("init: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := rlgate(t, "--ledger", pgURL, "--blobs", "s3://no-such-bucket/p", "--s3-endpoint", srv.Endpoint,
		"--s3-path-style", "head"); code != exitError || !strings.Contains(errOut, "no bucket no-such-bucket") || !strings.Contains(errOut, "Try: create the bucket") {
		t.Errorf("head with a missing bucket: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, append(s3, "run", "--stage", "sft", "--run", "sft1", "--gpu", "off",
		"--metrics", "../../testdata/trainer-logs/llamafactory-trainer_log.jsonl:llamafactory", "--",
		"sh", "-c", "echo trained; env | grep AWS_")...); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, _ := rlgate(t, append(s3, "verify")...)
	if code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify: exit %d: %s", code, out)
	}
	if strings.HasPrefix(out, "0 entries") || strings.Contains(out, " 0 blobs") {
		t.Errorf("verify checked no blobs: %s", out)
	}
	_, entries, _ := rlgate(t, append(s3, "log", "--json")...)
	if strings.Contains(entries, ledgertest.S3SecretKey) || !strings.Contains(entries, "sft1") {
		t.Errorf("the entries hold the S3 secret, or no run: %s", entries)
	}
	objects := s3Objects(t, srv, "cli/", func(key string, b []byte) {
		if strings.Contains(string(b), ledgertest.S3SecretKey) {
			t.Errorf("object %s holds the S3 secret", key)
		}
	})
	if objects == 0 {
		t.Error("the run stored no object under cli/")
	}

	// The endpoint from AWS_ENDPOINT_URL instead of the flag, and the
	// default cache directory (under XDG_CACHE_HOME).
	t.Setenv("AWS_ENDPOINT_URL", srv.Endpoint)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	envArgs := []string{"--ledger", pgURL, "--blobs", "s3://" + srv.Bucket + "/cli", "--s3-path-style"}
	_, wantHead, _ := rlgate(t, append(s3, "head")...)
	if code, head, errOut := rlgate(t, append(envArgs, "head")...); code != exitOK || head != wantHead {
		t.Errorf("head with the endpoint from AWS_ENDPOINT_URL: exit %d: %q, want %q: %s", code, head, wantHead, errOut)
	}
	s3Remembered(t, srv, pgURL, wantHead)
	back := filepath.Join(t.TempDir(), "back")
	copyLedgerCopy(t, func(args ...string) (int, string, string) { return rlgate(t, append(envArgs, args...)...) }, pgURL, back)
	if _, head, _ := rlgate(t, "--ledger", back, "head"); head != wantHead {
		t.Errorf("the SQLite copy's head %q, want %q", head, wantHead)
	}
	if code, out, _ := rlgate(t, "--ledger", back, "verify"); code != exitOK || !strings.Contains(out, "0 errors, 0 notes") {
		t.Errorf("verify the SQLite copy: exit %d: %s", code, out)
	}
}

// s3Remembered: the ledger at pgURL, made with --blobs s3://BUCKET/cli,
// remembers its store (endpoint, region and path style, no cache, no
// credential): head needs no --blobs; another prefix of the same bucket,
// which lacks the ledger's objects, is refused at open, naming the
// recorded location.
func s3Remembered(t *testing.T, srv *ledgertest.S3Server, pgURL, wantHead string) {
	t.Helper()
	if code, head, errOut := rlgate(t, "--ledger", pgURL, "head"); code != exitOK || head != wantHead {
		t.Errorf("head without --blobs: exit %d: %q, want %q: %s", code, head, wantHead, errOut)
	}
	code, _, errOut := rlgate(t, "--ledger", pgURL, "--blobs", "s3://"+srv.Bucket+"/other", "--s3-path-style", "head")
	recorded := "s3://" + srv.Bucket + "/cli?endpoint=" + url.QueryEscape(srv.Endpoint) + "&path-style=true&region=us-east-1: it lacks blob blake3:"
	if code != exitError || !strings.Contains(errOut, "is not this ledger's blob store, "+recorded) || strings.Contains(errOut, ledgertest.S3SecretKey) {
		t.Errorf("head with another prefix: exit %d: %s", code, errOut)
	}
}
