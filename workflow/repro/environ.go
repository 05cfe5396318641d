package repro

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/pipeline"
)

// Environ is rlgate's environment with the ledger at loc and the blob
// store at blobs (with an S3 store's options s3), as RLGATE_LEDGER and
// RLGATE_BLOBS with local paths made absolute, so the rlgate commands a
// stage runs record into the same ledger from the stage's directory. A
// password in a PostgreSQL URL reaches the stage, which must connect, but
// not the ledger: run.start records RLGATE_* variables through the
// redaction rule, which masks it. Errors name the flag (--ledger, --blobs,
// --cache) whose path could not be made absolute.
func Environ(loc, blobs string, s3 ledger.S3Options) ([]string, error) {
	abs := func(flag, p string) (string, error) {
		if p == "" {
			return "", nil
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("--%s %s: %w", flag, p, err)
		}
		return a, nil
	}
	var err error
	if !ledger.IsPostgres(loc) {
		if loc, err = abs("ledger", loc); err != nil {
			return nil, err
		}
	}
	if !ledger.IsS3(blobs) {
		if blobs, err = abs("blobs", blobs); err != nil {
			return nil, err
		}
	} else {
		if s3.Cache, err = abs("cache", s3.Cache); err != nil {
			return nil, err
		}
		blobs = ledger.WithS3(blobs, s3)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, ledger.EnvLedger+"=") || strings.HasPrefix(kv, ledger.EnvBlobs+"=")
	})
	env = append(env, ledger.EnvLedger+"="+loc)
	if blobs != "" {
		env = append(env, ledger.EnvBlobs+"="+blobs)
	}
	return env, nil
}

// WriteDecision writes a stage's decision in a line, and a line per
// problem it found.
func WriteDecision(w io.Writer, d pipeline.Decision) {
	fmt.Fprintf(w, "rlgate: %-10s %-9s %s\n", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
	for _, p := range d.Problems {
		fmt.Fprintf(w, "rlgate: %-10s %-9s %s\n", d.Stage, "problem", p)
	}
}
