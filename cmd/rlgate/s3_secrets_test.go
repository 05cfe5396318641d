//go:build postgres && s3

package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestS3SecretsNeverReachTheBucket: a run with secrets planted on every
// path it records, into a PostgreSQL ledger with blobs in S3: none is in
// pg_dump's dump, any object of the bucket or the local cache.
func TestS3SecretsNeverReachTheBucket(t *testing.T) {
	srv := ledgertest.S3(t)
	loc := ledgertest.Postgres(t)
	pgURL, _ := pgSplit(t, loc)
	cache := filepath.Join(t.TempDir(), "cache")
	s3 := []string{"--ledger", pgURL, "--blobs", "s3://" + srv.Bucket + "/secrets", "--s3-endpoint", srv.Endpoint,
		"--s3-region", "us-east-1", "--s3-path-style", "--cache", cache}
	if code, _, errOut := rlgate(t, append(s3, "init")...); code != exitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	secrets := plantedRun(t, s3, "", "--run", "p1")
	leaked := append(secretsIn("the dump", ledgertest.PGDump(t, loc), secrets), secretsLeaked(t, cache, secrets)...)
	objects := s3Objects(t, srv, "", func(key string, b []byte) {
		leaked = append(leaked, secretsIn("object "+key, b, secrets)...)
	})
	if objects == 0 {
		t.Fatal("the run stored no object: the bucket shows nothing")
	}
	if len(leaked) > 0 {
		t.Errorf("secrets in the S3 ledger: %v", leaked)
	}
}

// s3Objects calls fn with every object under prefix in srv's bucket and
// returns how many there were.
func s3Objects(t *testing.T, srv *ledgertest.S3Server, prefix string, fn func(key string, b []byte)) int {
	t.Helper()
	objects := 0
	for oi := range srv.Client.ListObjects(context.Background(), srv.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		objects++
		obj, err := srv.Client.GetObject(context.Background(), srv.Bucket, oi.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(obj)
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		fn(oi.Key, b)
	}
	return objects
}
