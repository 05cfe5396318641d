package ui

import "net/http"

// route registers every page. Paths name what a page shows; a run goes by
// query (/run?id=ID), since run ids may hold any printable character.
func (s *Server) route() {
	s.handle("/{$}", func(w http.ResponseWriter, r *http.Request) error {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
		return nil
	})
	s.handle("/runs", s.runs)
	s.handle("/run", s.run)
	s.handle("/entry/{ref}", s.entry)
	s.handle("/entry/{ref}/body", s.entryJSON)
	s.handle("/verdicts", s.verdicts)
	s.handle("/verdict/{seq}", s.verdict)
	s.handle("/lineage", s.lineage)
	s.handle("/compare", s.compare)
	s.handle("/trajectory", s.trajectory)
	s.handle("/trajectory/raw", s.trajectoryRaw)
}
