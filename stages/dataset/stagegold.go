package dataset

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// StageDBRoot is the database root a stage run grades the gold of the
// imported dataset man on: its db_root parameter (or a dotted name ending
// in .db_root; relative to the stage's directory dir) when it has one,
// else the root the import read. param names the parameter used, or is
// empty. rlgate run's pre-flight and the reward audit both take the root
// from here, so they check the same databases.
func StageDBRoot(man *Manifest, params map[string]string, dir string) (root, param string) {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if k == "db_root" || strings.HasSuffix(k, ".db_root") {
			v := params[k]
			if !filepath.IsAbs(v) {
				v = filepath.Join(dir, v)
			}
			return v, k
		}
	}
	return man.DBRoot, ""
}

// RecordedImport returns the dataset entry of the rlgate data import that
// wrote man's tasks and gold, or 0, with the manifest the ledger holds for
// it (whose database digests are the ones recorded at import, not those of
// a manifest.json edited since).
func RecordedImport(ctx context.Context, l *ledger.Ledger, man *Manifest) (int64, *Manifest, error) {
	rows, err := l.ArtifactsByDigest(ctx, man.Tasks.Digest)
	if err != nil {
		return 0, nil, err
	}
	for _, row := range rows {
		if row.Role != records.RoleDataset || row.Manifest == nil {
			continue
		}
		raw, err := l.ReadBlob(*row.Manifest)
		if err != nil {
			return 0, nil, err
		}
		var m Manifest
		if err := json.Unmarshal(raw, &m); err == nil && m.Gold.Digest == man.Gold.Digest {
			return row.Seq, &m, nil
		}
	}
	return 0, nil, nil
}
