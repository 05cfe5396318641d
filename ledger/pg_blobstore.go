package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// A PostgreSQL ledger remembers its blob store: rlgate init records where
// it is in meta (pgBlobStoreKey), and an open that names none (no --blobs,
// no RLGATE_BLOBS) uses it. The location recorded holds no credential: a
// local directory's absolute path, or s3://BUCKET/PREFIX with the
// endpoint, region and path style it was reached with (parseS3 refuses
// credentials in a location; they come from the environment), never the
// local cache, which is each machine's own.
//
// An S3 store is every host's: an open that names another store than the
// recorded S3 one is refused unless that store holds this ledger's
// objects: the newest blobs its entries name (pgBlobWitnesses of them, by
// blob_refs) must all be stored there, so a mirror or a moved copy (or
// the same bucket reached another way) is accepted and a wrong bucket
// fails at open, not at the first read. A ledger whose entries name no
// blob yet has nothing to show, so another store is refused. A local
// directory is each host's own (docs/FORMAT.md, *PostgreSQL ledgers*:
// blobs are local to a host), so one named at open is used as it is.

// pgBlobStoreKey is the meta key of a PostgreSQL ledger's blob store.
const pgBlobStoreKey = "blob_store"

// pgBlobWitnesses is how many of the newest blobs a store named at open
// must hold when it is not the recorded one.
const pgBlobWitnesses = 8

// errNoBlobStore is the error for a PostgreSQL ledger opened or made with
// no blob store named or recorded.
func errNoBlobStore(shown string) error {
	return &Error{Op: "open ledger", Path: shown, Err: errors.New("no blob store"),
		Hint: "give one with --blobs DIR or --blobs s3://BUCKET/PREFIX (or " + EnvBlobs + ")"}
}

// blobLocation is the location of store b (local directory dir) as meta
// records it.
func blobLocation(b blobStore, dir string) string {
	if s, ok := b.(*s3Blobs); ok {
		return s.location
	}
	return dir
}

// pgBlobStore returns the blob store an open of l uses and its local
// directory: the one named (blobs, dir; nil when none was), checked
// against the recorded one, or else the recorded one.
func (l *Ledger) pgBlobStore(ctx context.Context, blobs blobStore, dir string) (blobStore, string, error) {
	recorded, err := l.meta(ctx, l.db, pgBlobStoreKey)
	if errors.Is(err, sql.ErrNoRows) {
		recorded, err = "", nil // a ledger made before stores were recorded
	}
	switch {
	case err != nil:
		return nil, "", err
	case blobs == nil && recorded == "":
		return nil, "", errNoBlobStore(l.shown)
	case blobs == nil:
		return blobStoreAt(recorded, l.shown)
	case recorded == "" || !IsS3(recorded) || blobLocation(blobs, dir) == recorded:
		return blobs, dir, nil // a local directory is each host's own
	}
	if err := blobs.check(ctx); err != nil {
		return nil, "", err // a missing bucket is named as such
	}
	refuse := func(why string) (blobStore, string, error) {
		return nil, "", &Error{Op: "open ledger", Path: l.shown, Err: fmt.Errorf("--blobs %s is not this ledger's blob store, %s: %s", blobLocation(blobs, dir), recorded, why),
			Hint: "leave out --blobs and " + EnvBlobs + " (the ledger remembers its store), or copy its objects there first"}
	}
	rows, err := l.db.QueryContext(ctx, "SELECT digest, MAX(seq) AS s FROM blob_refs GROUP BY digest ORDER BY s DESC LIMIT ?", pgBlobWitnesses)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var hex string
		var seq int64
		if err := rows.Scan(&hex, &seq); err != nil {
			return nil, "", err
		}
		d, err := ParseDigest(hex)
		if err != nil {
			return nil, "", fmt.Errorf("blob_refs: %w", err)
		}
		if err := blobs.stored(ctx, d); errors.Is(err, fs.ErrNotExist) {
			return refuse(fmt.Sprintf("it lacks blob %s, which entry %d names", d, seq))
		} else if err != nil {
			return nil, "", err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if n == 0 {
		return refuse("no entry names a blob yet, so nothing shows it holds this ledger's")
	}
	return blobs, dir, nil
}

// blobStoreAt returns the blob store at loc (a directory, or an S3
// location) of the ledger shown, and its local directory.
func blobStoreAt(loc, shown string) (blobStore, string, error) {
	if IsS3(loc) {
		s, dir, err := parseS3(loc, shown)
		if err != nil {
			return nil, "", err
		}
		return s, dir, nil
	}
	dir, err := filepath.Abs(loc)
	if err != nil {
		return nil, "", err
	}
	return localBlobs{filepath.Join(dir, blobsDir)}, dir, nil
}
