package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// verdictsBody is the list of gate verdicts, a page at a time.
type verdictsBody struct {
	Verdicts []*audit.Verdict
	After    int64
	Next     int64 // the last verdict listed when more follow, else 0
}

// verdicts lists the gate.verdict entries as recorded, as the report's
// list of a model's verdicts does; a verdict's own page re-derives it.
func (s *Server) verdicts(w http.ResponseWriter, r *http.Request) error {
	after, err := seqParam(r, "after")
	if err != nil {
		return err
	}
	b := verdictsBody{After: after}
	for e, err := range s.l.Entries(r.Context(), ledger.Filter{Kind: records.KindVerdict, AfterSeq: after, Limit: PageSize + 1}) {
		if err != nil {
			return err
		}
		if len(b.Verdicts) == PageSize {
			b.Next = b.Verdicts[PageSize-1].Seq
			break
		}
		v, err := records.Decode[audit.Verdict](e.Kind, e.Body)
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.Seq, err)
		}
		v.Seq = e.Seq
		b.Verdicts = append(b.Verdicts, &v)
	}
	return s.render(w, r, "verdicts", "Gate verdicts", b)
}

// verdictBody is a verdict's page: the verdict re-derived, or why it was
// refused.
type verdictBody struct {
	Seq     int64
	Verdict *audit.Verdict
	Refused string // why audit.Rederive refused it; then Verdict is nil
}

// verdict shows gate verdict seq as audit.Rederive returns it, the call
// rlgate report, publish and verify-bundle make: every check with its
// finding and the entries behind it, every claim's figures and every
// audit. A verdict that does not re-derive is shown refused, with none
// of its recorded figures.
func (s *Server) verdict(w http.ResponseWriter, r *http.Request) error {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		return badRequest("verdict %q: want the seq of a gate.verdict entry", r.PathValue("seq"))
	}
	b := verdictBody{Seq: seq}
	v, err := audit.Rederive(r.Context(), s.l, seq)
	var ve *audit.VerdictError
	switch {
	case errors.As(err, &ve), errors.Is(err, ledger.ErrTampered):
		b.Refused = err.Error()
	case err != nil:
		return err
	default:
		b.Verdict = v
	}
	return s.render(w, r, "verdict", "Gate verdict "+strconv.FormatInt(seq, 10), b)
}
