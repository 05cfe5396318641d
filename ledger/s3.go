package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// A PostgreSQL ledger may keep its blobs in an S3 bucket instead of a local
// directory: --blobs s3://BUCKET/PREFIX. Object keys are the local store's
// paths under PREFIX: PREFIX/<first two hex digits>/<64 hex digits>, and
// every object carries its BLAKE3 digest in the user metadata
// x-amz-meta-rlgate-blake3, which lets a writer skip an upload the bucket
// already holds (see s3Blobs.put). Reads and verify re-hash every byte and
// never trust that metadata. The store still needs a local directory, for
// temporary files: its cache (see S3Options.Cache).
//
// The endpoint, region and path style come from the location's parameters
// (set from --s3-endpoint, --s3-region, --s3-path-style), else from the
// AWS environment variables; credentials come only from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), so they
// are never part of a location, a message or an entry.

// s3Scheme starts an S3 blob location.
const s3Scheme = "s3://"

// s3DigestMeta is the user metadata key holding an object's digest (hex).
const s3DigestMeta = "Rlgate-Blake3"

// IsS3 reports whether blobs names an S3 blob store (s3://BUCKET/PREFIX)
// rather than a directory.
func IsS3(blobs string) bool { return strings.HasPrefix(blobs, s3Scheme) }

// S3Options say how to reach an S3 blob store and where its local
// directory is. An empty field falls back to the environment (Endpoint:
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS itself; Region:
// AWS_REGION, AWS_DEFAULT_REGION, else asked of the server) or to a
// default (Cache: a directory under the user cache directory, one per
// ledger and bucket).
type S3Options struct {
	Endpoint  string // URL of the S3 server, http:// or https://
	Region    string
	PathStyle bool   // name the bucket in the path, not in the host name
	Cache     string // local directory for temporary files
}

// WithS3 returns the S3 blob location blobs with o's non-empty fields as
// its parameters (those given in blobs already stay); anything but an S3
// location is returned as it is.
func WithS3(blobs string, o S3Options) string {
	if !IsS3(blobs) {
		return blobs
	}
	u, err := url.Parse(blobs)
	if err != nil {
		return blobs // refused when opened
	}
	q := u.Query()
	set := func(k, v string) {
		if v != "" && !q.Has(k) {
			q.Set(k, v)
		}
	}
	set("endpoint", o.Endpoint)
	set("region", o.Region)
	if o.PathStyle {
		set("path-style", "true")
	}
	set("cache", o.Cache)
	u.RawQuery = q.Encode()
	return u.String()
}

// s3Blobs is a blob store in an S3 bucket.
type s3Blobs struct {
	client *minio.Client
	bucket string
	prefix string // without a trailing slash; "" for the bucket's root
	shown  string // s3://BUCKET/PREFIX at the endpoint, for messages
	// location is the store's location as a PostgreSQL ledger's meta
	// records it (see pgBlobStoreKey): no cache, no credential.
	location string
	// known holds the digests this process stored or found stored, whose
	// objects need no second look before an entry names them.
	known sync.Map
}

// parseS3 reads an S3 blob location and returns the store and its local
// directory: the cache parameter, else one under the user cache
// directory named for ledger (the ledger's URL as shown) and the bucket.
func parseS3(loc, ledger string) (*s3Blobs, string, error) {
	where := "--blobs" // never loc itself, which may hold credentials
	bad := func(err error, hint string) (*s3Blobs, string, error) {
		return nil, "", &Error{Op: "open blob store", Path: where, Err: err, Hint: hint}
	}
	u, err := url.Parse(loc)
	if err != nil {
		return bad(errors.New("not a URL"), "give --blobs as s3://BUCKET/PREFIX")
	}
	where = s3Scheme + path.Join(u.Host, u.Path)
	if u.User != nil {
		return bad(errors.New("credentials in the location"), "remove them and set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if u.Host == "" {
		return bad(errors.New("no bucket"), "give --blobs as s3://BUCKET/PREFIX")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad(errors.New("unreadable parameters"), "give --blobs as s3://BUCKET/PREFIX and the rest with --s3-endpoint, --s3-region, --s3-path-style and --cache")
	}
	for k := range q {
		switch k {
		case "endpoint", "region", "path-style", "cache":
		default:
			return bad(fmt.Errorf("unknown parameter %q", k), "use --s3-endpoint, --s3-region, --s3-path-style and --cache")
		}
	}
	endpoint := firstOf(q.Get("endpoint"), os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"), "https://s3.amazonaws.com")
	ep, err := url.Parse(endpoint)
	switch {
	case err != nil:
		ep, err = &url.URL{Host: "(unreadable)"}, errors.New("not a URL") // url's error would repeat it, credentials and all
	case ep.Scheme != "http" && ep.Scheme != "https" || ep.Host == "":
		err = errors.New("want http://HOST[:PORT] or https://HOST[:PORT]")
	case ep.User != nil:
		err = errors.New("it holds credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead")
	case strings.Trim(ep.Path, "/") != "":
		err = errors.New("it has a path; give the bucket and prefix in --blobs")
	}
	if err != nil {
		return bad(fmt.Errorf("S3 endpoint %s: %w", strings.TrimPrefix(ep.Scheme+"://"+ep.Host, "://"), err), "fix --s3-endpoint or AWS_ENDPOINT_URL")
	}
	pathStyle := false
	if v := q.Get("path-style"); v != "" {
		if pathStyle, err = strconv.ParseBool(v); err != nil {
			return bad(fmt.Errorf("path-style=%q: %w", v, err), "give --s3-path-style alone, or path-style=true")
		}
	}
	region := firstOf(q.Get("region"), os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	lookup := minio.BucketLookupAuto
	if pathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(ep.Host, &minio.Options{
		Creds:        credentials.NewEnvAWS(),
		Secure:       ep.Scheme == "https",
		Region:       region,
		BucketLookup: lookup,
	})
	if err != nil {
		return bad(err, "fix --s3-endpoint or AWS_ENDPOINT_URL")
	}
	s := &s3Blobs{client: client, bucket: u.Host, prefix: strings.Trim(u.Path, "/")}
	s.shown = s3Scheme + path.Join(s.bucket, s.prefix) + " at " + ep.Scheme + "://" + ep.Host
	rec := url.Values{"endpoint": {ep.Scheme + "://" + ep.Host}}
	if region != "" {
		rec.Set("region", region)
	}
	if pathStyle {
		rec.Set("path-style", "true")
	}
	s.location = s3Scheme + path.Join(s.bucket, s.prefix) + "?" + rec.Encode()
	cache := q.Get("cache")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return bad(fmt.Errorf("no local directory: %w", err), "give one with --cache DIR (or "+EnvCache+")")
		}
		cache = filepath.Join(base, "rlgate", Sum([]byte(ledger + "\n" + s.shown)).Hex()[:32])
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return bad(err, "")
	}
	return s, cache, nil
}

// EnvCache names the environment variable that gives an S3 blob store's
// local directory when --cache does not.
const EnvCache = "RLGATE_CACHE"

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func (s *s3Blobs) key(d Digest) string {
	h := d.Hex()
	return path.Join(s.prefix, h[:2], h)
}

// check makes sure the bucket exists and the credentials may read it, so
// that a wrong endpoint, bucket or key shows up at open.
func (s *s3Blobs) check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	switch {
	case err != nil:
		return &Error{Op: "open blob store", Path: s.shown, Err: err,
			Hint: "check --s3-endpoint (or AWS_ENDPOINT_URL), the region and AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"}
	case !ok:
		return &Error{Op: "open blob store", Path: s.shown, Err: fmt.Errorf("no bucket %s", s.bucket),
			Hint: "create the bucket (rlgate never creates one), or fix --blobs"}
	}
	return nil
}

// put uploads tmp as blob d unless the bucket holds it already: an object
// at d's key whose size is n and whose digest metadata is d. Trusting the
// metadata instead of downloading and re-hashing the object saves reading
// every blob back on every write; an object damaged in the store after it
// was written is what verify (which re-hashes) reports. The upload has
// completed, and S3 has the whole object, when PutObject returns.
func (s *s3Blobs) put(ctx context.Context, tmp string, d Digest, n int64) error {
	if _, ok := s.known.Load(d); ok {
		return nil
	}
	oi, err := s.client.StatObject(ctx, s.bucket, s.key(d), minio.StatObjectOptions{})
	if err == nil && oi.Size == n && oi.Metadata.Get("X-Amz-Meta-"+s3DigestMeta) == d.Hex() {
		s.known.Store(d, true)
		return nil
	}
	if err != nil && !s3NotFound(err) {
		return fmt.Errorf("look up %s in %s: %w", s.key(d), s.shown, err)
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = s.client.PutObject(ctx, s.bucket, s.key(d), f, n, minio.PutObjectOptions{
		ContentType:  "application/octet-stream",
		UserMetadata: map[string]string{s3DigestMeta: d.Hex()},
	})
	if err != nil {
		return fmt.Errorf("upload to %s: %w", s.shown, err)
	}
	s.known.Store(d, true)
	return nil
}

func (s *s3Blobs) open(ctx context.Context, d Digest) (io.ReadCloser, int64, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, s.key(d), minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, s.readError(d, err)
	}
	oi, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, 0, s.readError(d, err)
	}
	return obj, oi.Size, nil
}

func (s *s3Blobs) stored(ctx context.Context, d Digest) error {
	if _, ok := s.known.Load(d); ok {
		return nil
	}
	if _, err := s.client.StatObject(ctx, s.bucket, s.key(d), minio.StatObjectOptions{}); err != nil {
		return s.readError(d, err)
	}
	s.known.Store(d, true)
	return nil
}

// readError names the object, and is fs.ErrNotExist for an absent one.
func (s *s3Blobs) readError(d Digest, err error) error {
	if s3NotFound(err) {
		return fmt.Errorf("object %s in %s: %w", s.key(d), s.shown, fs.ErrNotExist)
	}
	return fmt.Errorf("object %s in %s: %w", s.key(d), s.shown, err)
}

func s3NotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.Code == minio.NoSuchKey || r.StatusCode == http.StatusNotFound && r.Code != minio.NoSuchBucket
}

// noteStray lists the objects under the prefix and notes those no entry
// names or that are not blobs. Temporary files are local, in the cache
// of each writer, and not listed.
func (s *s3Blobs) noteStray(ctx context.Context, rep *VerifyReport, refs map[Digest]int64) {
	prefix := s.prefix
	if prefix != "" {
		prefix += "/"
	}
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			if ctx.Err() == nil {
				rep.add(Finding{Severity: SeverityError, Check: "blob", Message: fmt.Sprintf("cannot list %s: %v", s.shown, oi.Err)})
			}
			return
		}
		noteStrayBlob(rep, refs, strings.TrimPrefix(oi.Key, prefix), s3Scheme+path.Join(s.bucket, oi.Key))
	}
}
