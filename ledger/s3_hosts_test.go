//go:build postgres && s3

package ledger_test

import (
	"net/url"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestS3TwoHostsConcurrentProcesses is TestPGFaultConcurrentProcesses as
// a team runs it: the two hosts share one bucket prefix for blobs, each
// through its own local cache. Without any copying between them, verify
// from either host finds every blob every writer's entries name.
func TestS3TwoHostsConcurrentProcesses(t *testing.T) {
	srv := ledgertest.S3(t)
	pg := ledgertest.Postgres(t)
	host := func() string {
		u, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("blobs", srv.Blobs(t, "team")) // a fresh cache each
		u.RawQuery = q.Encode()
		return u.String()
	}
	hosts := map[string]string{"a-": host(), "b-": host()}
	committed := pgfaultAppendAtOnce(t, pg, hosts)
	var rep *ledger.VerifyReport
	for prefix, loc := range hosts {
		l, err := ledger.OpenReadOnly(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		rep, err = l.Verify(ctx, ledger.VerifyOptions{})
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.BlobsChecked < pgfaultWriters*pgfaultBatches {
			t.Errorf("verify on host %s: %d errors, %d blobs checked (want at least %d): %+v",
				prefix, rep.Errors, rep.BlobsChecked, pgfaultWriters*pgfaultBatches, rep.Findings)
		}
	}
	pgfaultAllCommitted(t, pg, rep, committed)
}
