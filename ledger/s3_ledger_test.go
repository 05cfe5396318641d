//go:build postgres && s3

package ledger_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestS3BlobRoundTrip: blobs of a PostgreSQL ledger go to the bucket as
// PREFIX/<2 hex>/<64 hex> objects carrying their digest, come back intact
// through a second open (no memory of the writes), and verify re-hashes
// every one of them.
func TestS3BlobRoundTrip(t *testing.T) {
	srv := ledgertest.S3(t)
	loc := srv.PostgresS3(t, "team/a")
	l, err := ledger.Init(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := map[ledger.Digest][]byte{}
	var ds []ledger.Digest
	for i, b := range [][]byte{[]byte("stdout line\n"), {}, bytes.Repeat([]byte("trajectory "), 200_000)} {
		d, n, err := l.PutBlob(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if d != ledger.Sum(b) || n != int64(len(b)) {
			t.Errorf("blob %d: PutBlob gave %s (%d bytes), want %s (%d bytes)", i, d, n, ledger.Sum(b), len(b))
		}
		want[d] = b
		ds = append(ds, d)
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: "log", Run: "r1", Body: map[string]int{"n": 3}, Blobs: ds}); err != nil {
		t.Fatal(err)
	}
	for d, b := range want {
		oi, err := srv.Client.StatObject(ctx, srv.Bucket, "team/a/"+d.Hex()[:2]+"/"+d.Hex(), minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("object for %s: %v", d, err)
		}
		if got := oi.Metadata.Get("X-Amz-Meta-Rlgate-Blake3"); got != d.Hex() || oi.Size != int64(len(b)) {
			t.Errorf("object for %s: digest metadata %q, size %d", d, got, oi.Size)
		}
	}

	r, err := ledger.OpenReadOnly(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for d, b := range want {
		got, err := r.ReadBlob(d)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("blob %s: read back %d bytes, not the %d stored", d, len(got), len(b))
		}
	}
	if _, err := r.ReadBlob(ledger.Sum([]byte("never stored"))); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("read an absent blob: %v, want ErrNotFound", err)
	}
	rep := ledgertest.Check(t, r)
	if rep.BlobsChecked != 3 || rep.BlobBytes != int64(len("stdout line\n")+11*200_000) {
		t.Errorf("verify checked %d blobs (%d bytes), want 3 (%d bytes)", rep.BlobsChecked, rep.BlobBytes, len("stdout line\n")+11*200_000)
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: "log", Run: "r1", Blobs: []ledger.Digest{ledger.Sum([]byte("never stored"))}, Body: map[string]int{}}); !errors.Is(err, ledger.ErrBlobMissing) {
		t.Errorf("append naming an absent object: %v, want ErrBlobMissing", err)
	}

	// A blob stored and never named (an interrupted write), and an object
	// that is no blob: notes, not errors. Objects outside the prefix are
	// not the ledger's. (S3 lists keys in order.)
	stray, err := l.PutBlobBytes([]byte("stored, then the stage died"))
	if err != nil {
		t.Fatal(err)
	}
	s3PutObject(t, srv, "team/a/README", []byte("hello"), nil)
	s3PutObject(t, srv, "team/b/"+stray.Hex()[:2]+"/"+stray.Hex(), []byte("another ledger's"), nil)
	rep = ledgertest.Check(t, r)
	wantNotes := []ledger.Finding{
		{Severity: ledger.SeverityNote, Check: "blob", Digest: stray.String(), Message: "no entry names this blob (left by an interrupted write; harmless)"},
		{Severity: ledger.SeverityNote, Check: "blob", Message: "file in the blob store that is not a blob: s3://" + srv.Bucket + "/team/a/README"},
	}
	if diff := cmp.Diff(wantNotes, rep.Findings); diff != "" {
		t.Errorf("verify findings (-want +got):\n%s", diff)
	}
}

// TestS3SkipWhenExists: a writer that finds the object already in the
// bucket with the same size and digest metadata does not upload it again;
// an object at the key whose metadata names another digest, or has none,
// is replaced by the writer's bytes.
func TestS3SkipWhenExists(t *testing.T) {
	srv := ledgertest.S3(t)
	loc := srv.PostgresS3(t, "skip")
	l, err := ledger.Init(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, tc := range []struct {
		name     string
		meta     map[string]string // of the object in the way; nil: its own digest
		uploaded bool
	}{
		{name: "same digest", uploaded: false},
		{name: "other digest", meta: map[string]string{"Rlgate-Blake3": strings.Repeat("0", 64)}, uploaded: true},
		{name: "no digest", meta: map[string]string{}, uploaded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := []byte("blob for " + tc.name)
			d := ledger.Sum(b)
			// The object in the way has the right size but other bytes, so
			// what PutBlob did shows in what the bucket holds afterwards.
			inWay := bytes.ToUpper(b)
			meta := tc.meta
			if meta == nil {
				meta = map[string]string{"Rlgate-Blake3": d.Hex()}
			}
			s3PutObject(t, srv, s3Key("skip", d), inWay, meta)
			w, err := ledger.Open(ctx, loc) // a fresh writer: no memory of earlier puts
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if got, _, err := w.PutBlob(bytes.NewReader(b)); err != nil || got != d {
				t.Fatalf("PutBlob: %s, %v", got, err)
			}
			got := s3GetObject(t, srv, s3Key("skip", d))
			if uploaded := bytes.Equal(got, b); uploaded != tc.uploaded {
				t.Errorf("uploaded = %v, want %v (the bucket holds %q)", uploaded, tc.uploaded, got)
			}
		})
	}
}

// TestS3VerifyNamesDamagedObject: one byte of an object changed in the
// bucket (its digest metadata left as it was), or the object deleted:
// verify names the blob's digest and the entry that names it.
func TestS3VerifyNamesDamagedObject(t *testing.T) {
	srv := ledgertest.S3(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, key string, b []byte)
		want   string
	}{
		{"one byte changed", func(t *testing.T, key string, b []byte) {
			meta := map[string]string{"Rlgate-Blake3": ledger.Sum(b).Hex()}
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0x20
			s3PutObject(t, srv, key, b, meta)
		}, "content hashes to %s (named by entry 3)"},
		{"deleted", func(t *testing.T, key string, _ []byte) {
			if err := srv.Client.RemoveObject(ctx, srv.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "missing (named by entry 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.ReplaceAll(tc.name, " ", "-")
			loc := srv.PostgresS3(t, prefix)
			l, err := ledger.Init(ctx, loc)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			keep, err := l.PutBlobBytes([]byte("an intact log\n"))
			if err != nil {
				t.Fatal(err)
			}
			b := []byte("select name from singer where age > 30\n")
			d, err := l.PutBlobBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			for _, ds := range [][]ledger.Digest{{keep}, {d}} {
				if _, err := l.Append(ctx, ledger.Record{Kind: "log", Run: "r1", Body: map[string]int{}, Blobs: ds}); err != nil {
					t.Fatal(err)
				}
			}
			ledgertest.Check(t, l)
			tc.damage(t, s3Key(prefix, d), b)
			rep, err := l.Verify(ctx, ledger.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			msg := tc.want
			if strings.Contains(msg, "%s") {
				damaged := bytes.Clone(b)
				damaged[len(b)/2] ^= 0x20
				msg = fmt.Sprintf(msg, ledger.Sum(damaged))
			}
			want := []ledger.Finding{{Severity: ledger.SeverityError, Check: "blob", Digest: d.String(), Message: msg}}
			if diff := cmp.Diff(want, rep.Findings); diff != "" {
				t.Errorf("verify findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestS3CopyRoundTrip: ledger copy SQLite -> PostgreSQL with S3 blobs ->
// SQLite gives identical entries, runs and heads, each copy verifying
// clean (every object re-hashed), and an incremental copy along the same
// path after the source grew.
func TestS3CopyRoundTrip(t *testing.T) {
	srv := ledgertest.S3(t)
	src := copySource(t, 3)
	pg := srv.PostgresS3(t, "copy")
	res, err := ledger.Copy(ctx, src, pg, ledger.CopyOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Entries != 19 || res.Blobs != 6 {
		t.Errorf("copy into PostgreSQL+S3: %+v, want a new ledger of 19 entries and 6 blobs", res)
	}
	copyCheck(t, src, pg)
	if n := s3CountObjects(t, srv, "copy/"); n != 6 {
		t.Errorf("the bucket holds %d objects under copy/, want 6", n)
	}
	copyBackAndGrow(t, src, pg)
}

func s3Key(prefix string, d ledger.Digest) string { return prefix + "/" + d.Hex()[:2] + "/" + d.Hex() }

func s3PutObject(t *testing.T, srv *ledgertest.S3Server, key string, b []byte, meta map[string]string) {
	t.Helper()
	if _, err := srv.Client.PutObject(ctx, srv.Bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{UserMetadata: meta}); err != nil {
		t.Fatal(err)
	}
}

func s3GetObject(t *testing.T, srv *ledgertest.S3Server, key string) []byte {
	t.Helper()
	obj, err := srv.Client.GetObject(ctx, srv.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func s3CountObjects(t *testing.T, srv *ledgertest.S3Server, prefix string) int {
	t.Helper()
	n := 0
	for oi := range srv.Client.ListObjects(ctx, srv.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		n++
	}
	return n
}
