//go:build postgres && s3

package ledgertest

import (
	"context"
	"go/build"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The S3 harness needs the postgres tag too: only a PostgreSQL ledger
// keeps its blobs in S3 (a ledger directory keeps them in itself).

// S3Server is a throwaway S3-compatible server (Versity's gateway,
// versitygw, with its posix backend in a temporary directory) on a free
// loopback port, holding one empty bucket.
type S3Server struct {
	Endpoint string        // http://127.0.0.1:PORT
	Bucket   string        // the bucket S3 made
	Client   *minio.Client // with the root credentials, to look at or damage objects
}

// The root credentials of every S3Server. S3 puts them in the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), where rlgate
// reads them, for the rest of the test.
const (
	S3AccessKey = "rlgate-test-access"
	S3SecretKey = "rlgate-test-secret-4f1d9c"
)

// S3 starts versitygw (on PATH or in $GOPATH/bin: go install
// github.com/versity/versitygw/cmd/versitygw@v1.8.0) and stops it, and
// removes its directory, when the test ends. It sets the AWS credential
// variables with t.Setenv, so the test cannot run in parallel.
func S3(t testing.TB) *S3Server {
	t.Helper()
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		bin = filepath.Join(build.Default.GOPATH, "bin", "versitygw")
		if _, err := os.Stat(bin); err != nil {
			t.Fatal("no versitygw: the s3 tests need it (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
		}
	}
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(pgFreePort(t))
	log, err := os.Create(filepath.Join(root, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", data)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+S3AccessKey, "ROOT_SECRET_ACCESS_KEY="+S3SecretKey)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	t.Setenv("AWS_ACCESS_KEY_ID", S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", S3SecretKey)
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(S3AccessKey, S3SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	s := &S3Server{Endpoint: "http://" + addr, Bucket: "rlgate-test", Client: client}
	// The gateway listens once it has started: wait for it, at most 20 s.
	ctx := context.Background()
	for i := 0; ; i++ {
		err = client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{})
		if err == nil {
			return s
		}
		if i == 200 {
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("versitygw on %s: make bucket: %v\n%s", addr, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Blobs returns the S3 blob location --blobs takes for prefix in the
// server's bucket, with the endpoint, path style, region and a fresh
// local cache directory as its parameters.
func (s *S3Server) Blobs(t testing.TB, prefix string) string {
	u := url.URL{Scheme: "s3", Host: s.Bucket, Path: "/" + prefix, RawQuery: url.Values{
		"endpoint": {s.Endpoint}, "region": {"us-east-1"}, "path-style": {"true"},
		"cache": {filepath.Join(t.TempDir(), "cache")}}.Encode()}
	return u.String()
}

// PostgresS3 is Postgres with its blobs in prefix of the server's bucket.
func (s *S3Server) PostgresS3(t testing.TB, prefix string) string {
	t.Helper()
	u, err := url.Parse(Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("blobs", s.Blobs(t, prefix))
	u.RawQuery = q.Encode()
	return u.String()
}
