//go:build postgres && s3

package ledger_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// BenchmarkCopyToPostgresS3 times rlgate ledger copy of a SQLite ledger of
// ENTRIES entries (default 100,000) and BLOB_BYTES of blobs (default
// 1 GiB, 1024 blobs), made by bench/verifygen, into a new PostgreSQL
// ledger whose blobs go to S3 (local throwaway servers), as a run done
// offline is moved into the team ledger. Run it once:
//
//	go test -tags 'postgres s3' ./ledger -run x -bench CopyToPostgresS3 -benchtime 1x
func BenchmarkCopyToPostgresS3(b *testing.B) {
	src := filepath.Join(b.TempDir(), "src")
	gen := exec.Command("go", "run", "../bench/verifygen", "-ledger", src,
		"-entries", envOr("ENTRIES", "100000"), "-blob-bytes", envOr("BLOB_BYTES", "1073741824"))
	gen.Stderr = os.Stderr
	if err := gen.Run(); err != nil {
		b.Fatal(err)
	}
	srv := ledgertest.S3(b)
	from, err := ledger.OpenReadOnly(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	defer from.Close()
	for b.Loop() {
		b.StopTimer()
		to := srv.PostgresS3(b, "copy")
		b.StartTimer()
		res, err := ledger.Copy(ctx, from, to, ledger.CopyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Entries), "entries/op")
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
