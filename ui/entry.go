package ui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// maxBodyShown bounds the body an entry page shows indented; the whole
// canonical body is one click away (/entry/REF/body).
const maxBodyShown = 512 << 10

// entryBody is an entry's page.
type entryBody struct {
	ledger.Entry
	Ref      string // how the page was asked for: seq or hash prefix
	Blobs    []blobCheck
	Body     string // indented, at most maxBodyShown bytes
	Cut      bool
	BodySize int
}

// lookup finds the entry ref names: "head", a seq (up to 7 digits, as
// rlgate show reads it) or 4 to 64 hex digits of its hash.
func (s *Server) lookup(r *http.Request, ref string) (ledger.Entry, error) {
	ctx := r.Context()
	if ref == "head" {
		h, err := s.l.Head(ctx)
		if err != nil {
			return ledger.Entry{}, err
		}
		return s.l.EntryBySeq(ctx, h.Seq)
	}
	if seq, err := strconv.ParseInt(ref, 10, 64); err == nil && len(ref) < 8 {
		if seq < 1 {
			return ledger.Entry{}, badRequest("entry %s: sequence numbers start at 1", ref)
		}
		return s.l.EntryBySeq(ctx, seq)
	}
	h := strings.TrimPrefix(ref, "blake3:")
	if len(h) < 4 || len(h) > 64 || strings.Trim(strings.ToLower(h), "0123456789abcdef") != "" {
		return ledger.Entry{}, badRequest("entry %q: want a seq (a number from 1) or 4 to 64 hex digits of a hash", ref)
	}
	return s.l.EntryByHash(ctx, h)
}

// entry shows one entry: seq, hash, the previous entry's hash (a link),
// kind, run (a link), time, the blobs it names re-hashed, and its body.
func (s *Server) entry(w http.ResponseWriter, r *http.Request) error {
	ref := r.PathValue("ref")
	e, err := s.lookup(r, ref)
	if err != nil {
		return err
	}
	b := entryBody{Entry: e, Ref: ref, Blobs: s.checkBlobs(e.Blobs), BodySize: len(e.Body)}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, e.Body, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(e.Body) // not JSON: shown as the ledger holds it
	}
	b.Body = pretty.String()
	if len(b.Body) > maxBodyShown {
		b.Body, b.Cut = b.Body[:maxBodyShown], true
	}
	return s.render(w, r, "entry", "Entry "+strconv.FormatInt(e.Seq, 10), b)
}

// entryJSON answers an entry's body as the ledger holds it: the canonical
// JSON its hash covers.
func (s *Server) entryJSON(w http.ResponseWriter, r *http.Request) error {
	e, err := s.lookup(r, r.PathValue("ref"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", "inline; filename=entry-"+strconv.FormatInt(e.Seq, 10)+".json")
	w.Write(e.Body)
	return nil
}
