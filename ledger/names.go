package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxNameLen is the longest name, in bytes, CheckName accepts.
const MaxNameLen = 256

// CheckName is the rule for every name a ledger records and rlgate prints
// back: run ids, stage names, labels, artifact and dataset names. A name
// read from a ledger (one shared as a CI artifact, say) reaches a
// reviewer's terminal, so it may hold only printable characters
// (strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the
// ASCII space), never ESC, BEL, newlines, other spaces or bidirectional
// overrides that could repaint the screen or reorder what is shown. Inner
// ASCII spaces are allowed (checkpoint and dataset names default to file
// names, which have them); leading or trailing ones are not, since a
// table cannot show them and --runs trims them. The error says what is
// wrong with the name, for the caller to prefix with where it came from.
func CheckName(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > MaxNameLen:
		return fmt.Errorf("is %d bytes long, more than the %d allowed", len(s), MaxNameLen)
	case strings.TrimLeft(s, " ") != s || strings.TrimRight(s, " ") != s:
		return errors.New("starts or ends with a space")
	}
	return checkPrintable(s)
}

// checkPrintable is CheckName's rule for characters alone. Artifact names
// follow only it: a config artifact is named by its file's path, which may
// be longer than a name and end in a space.
func checkPrintable(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return fmt.Errorf("holds the non-printable character %U; use letters, digits, punctuation and inner spaces", r)
		}
	}
	return nil
}

// Printable returns s as it may be shown on a terminal: every rune that
// is not printable (as CheckName defines it) and every byte that is not
// UTF-8 replaced by its Go escape (\x1b, \a, \n, \u202e, \xff), the rest
// unchanged. Ledgers written before CheckName existed, or by another
// program, may hold any bytes in names and bodies; every command prints
// them through Printable.
func Printable(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || !strconv.IsPrint(r) })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b': drop the quotes
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// checkNames applies CheckName to the names a new entry records, its run
// id and a run.start's stage, and checkPrintable to an artifact's name.
// Only appends check them; verify and copies accept the entries of
// ledgers written before.
func checkNames(kind, run string, body []byte) error {
	if run != "" {
		if err := CheckName(run); err != nil {
			return fmt.Errorf("run id %q %w", run, err)
		}
	}
	var named struct {
		Stage string `json:"stage"`
		Name  string `json:"name"`
	}
	switch kind {
	case records.KindRunStart:
		if json.Unmarshal(body, &named) == nil && named.Stage != "" {
			if err := CheckName(named.Stage); err != nil {
				return fmt.Errorf("stage %q %w", named.Stage, err)
			}
		}
	case records.KindArtifact:
		if json.Unmarshal(body, &named) == nil && named.Name != "" {
			if err := checkPrintable(named.Name); err != nil {
				return fmt.Errorf("artifact name %q %w", named.Name, err)
			}
		}
	}
	return nil
}
