package ledger

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestS3WithOptions: the CLI's S3 flags become parameters of an s3://
// location, without overriding ones it has; a directory is left alone.
func TestS3WithOptions(t *testing.T) {
	o := S3Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", PathStyle: true, Cache: "/var/cache/rl"}
	for _, tc := range []struct{ in, want string }{
		{"s3://bkt/team/rl", "s3://bkt/team/rl?cache=%2Fvar%2Fcache%2Frl&endpoint=http%3A%2F%2F127.0.0.1%3A9000&path-style=true&region=eu-west-1"},
		{"s3://bkt?region=us-east-2", "s3://bkt?cache=%2Fvar%2Fcache%2Frl&endpoint=http%3A%2F%2F127.0.0.1%3A9000&path-style=true&region=us-east-2"},
		{"/srv/rlgate", "/srv/rlgate"},
		{"", ""},
	} {
		if got := WithS3(tc.in, o); got != tc.want {
			t.Errorf("WithS3(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := WithS3("s3://bkt/p", S3Options{}); got != "s3://bkt/p" {
		t.Errorf("WithS3 with no options = %q", got)
	}
}

// TestS3Location: how an s3:// location is read: object keys, the
// endpoint from the parameter or the AWS variables, the default cache
// directory (one per ledger), and locations refused with a message that
// never repeats a credential.
func TestS3Location(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/home/u/.cache")
	t.Setenv("AWS_ENDPOINT_URL", "http://generic.example:9000")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	s, cache, err := parseS3("s3://bkt/team/rl/", "postgres://u@db/a")
	if err != nil {
		t.Fatal(err)
	}
	d := Sum([]byte("x"))
	got := []string{s.bucket, s.key(d), s.shown, filepath.Dir(cache)}
	want := []string{"bkt", "team/rl/" + d.Hex()[:2] + "/" + d.Hex(), "s3://bkt/team/rl at http://generic.example:9000", "/home/u/.cache/rlgate"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("s3://bkt/team/rl/ (-want +got):\n%s", diff)
	}
	if _, other, _ := parseS3("s3://bkt/team/rl/", "postgres://u@db/b"); other == cache {
		t.Errorf("two ledgers share the default cache %s", cache)
	}

	t.Setenv("AWS_ENDPOINT_URL_S3", "https://s3.example:8443")
	s, cache, err = parseS3("s3://bkt?cache=rel/cache", "postgres://u@db/a")
	if err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs("rel/cache"); cache != abs || s.key(d) != d.Hex()[:2]+"/"+d.Hex() || !strings.HasSuffix(s.shown, "at https://s3.example:8443") {
		t.Errorf("s3://bkt?cache=rel/cache: cache %s, key %s, shown %s", cache, s.key(d), s.shown)
	}
	s, _, err = parseS3("s3://bkt?endpoint=http://127.0.0.1:7070", "postgres://u@db/a")
	if err != nil || !strings.HasSuffix(s.shown, "at http://127.0.0.1:7070") {
		t.Errorf("the endpoint parameter goes before the variables: %v, %v", s, err)
	}

	for _, tc := range []struct{ loc, want string }{
		{"s3://AKIAEXAMPLE:hunter2secret@bkt/p", "credentials in the location"},
		{"s3://bkt/p?endpoint=http://AKIAEXAMPLE:hunter2secret@127.0.0.1:7070", "it holds credentials"},
		{"s3://bkt/p?endpoint=ftp://127.0.0.1", "S3 endpoint ftp://127.0.0.1: want http://HOST[:PORT]"},
		{"s3://bkt/p?endpoint=http://127.0.0.1:7070/bkt", "it has a path"},
		{"s3://bkt/p?secret=hunter2secret", `unknown parameter "secret"`},
		{"s3://bkt/p?path-style=maybe", `path-style="maybe"`},
		{"s3:///p", "no bucket"},
		{"s3://bkt/p?endpoint=http://AKIAEXAMPLE:hunter2secret@127.0.0.1:7070%zz", "unreadable parameters"},
		{"s3://bkt/p?endpoint=http://AKIAEXAMPLE:hunter2secret@127.0.0.1:7070%2F%7F", "S3 endpoint (unreadable): not a URL"},
	} {
		_, _, err := parseS3(tc.loc, "postgres://u@db/a")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.loc, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("%s: the error repeats the secret: %v", tc.loc, err)
		}
	}
}
