package data

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/export"
)

// WriteImported writes what an import wrote and recorded, and the
// questions it skipped, per database, under dbRoot as the user named it
// (rlgate data import).
func WriteImported(w io.Writer, s *Imported, dbRoot string) error {
	fmt.Fprintf(w, "imported %s: %d tasks to %s\n  tasks %s\n  gold  %s\n", s.Dataset, s.Tasks.Count, s.Out, s.Tasks.Digest, s.Gold.Digest)
	if n := len(s.Skipped); n > 0 {
		fmt.Fprintf(w, "  skipped %d questions whose database is missing under %s: %s\n", n, dbRoot, skippedByDB(s.Skipped))
	}
	_, err := fmt.Fprintf(w, "  recorded as dataset entry %d\n", s.Seq)
	return err
}

// skippedByDB lists the skipped questions per database, in the order the
// databases first appear: "wta_1 (62 questions), ...".
func skippedByDB(skipped []dataset.Skipped) string {
	var order []string
	count := map[string]int{}
	for _, sk := range skipped {
		if count[sk.DBID] == 0 {
			order = append(order, sk.DBID)
		}
		count[sk.DBID]++
	}
	parts := make([]string, len(order))
	for i, db := range order {
		parts[i] = fmt.Sprintf("%s (%d)", db, count[db])
	}
	return strings.Join(parts, ", ")
}

// WriteText says how many prompts were rendered, where, under which
// protocol, and the entry recorded (rlgate data render).
func (s *Rendered) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "rendered %d prompts to %s %s (protocol %s); recorded as entry %d\n", s.Tasks, s.Out, s.Digest, s.ProtocolDigest, s.Seq)
	return err
}

// WriteExport writes what an export wrote and recorded, and what it left
// out (rlgate export).
func WriteExport(w io.Writer, s *export.Summary) error {
	verb := "recorded"
	if s.Status == "complete" {
		verb = "was recorded before; files written again, identical"
	}
	fmt.Fprintf(w, "rlgate: export %s %s: %d %s rows (%s); entries %d..%d\n", s.Run, verb, s.Rows, s.Kind, s.Format, s.StartSeq, s.EndSeq)
	if x := s.Exclusion; x != nil {
		fmt.Fprintf(w, "rlgate: left out %d tasks of the %d ids in %s (%s)\n", x.Excluded, x.IDs, x.Path, x.Digest)
	}
	for _, n := range slices.Sorted(maps.Keys(s.Outputs)) {
		fmt.Fprintf(w, "rlgate: wrote %s %s\n", s.Paths[n], s.Outputs[n])
	}
	return nil
}
