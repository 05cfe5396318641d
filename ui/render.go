package ui

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/reports"
)

// page is what the layout shows around a page's content (Body).
type page struct {
	Title string
	Nav   []navItem
	Head  *ledger.Head
	Body  any
}

// navItem is a link of the layout's navigation bar.
type navItem struct{ Name, Path string }

// nav is the navigation bar: one item per kind of page a reader starts
// from.
var nav = []navItem{{"Runs", "/runs"}, {"Verdicts", "/verdicts"}, {"Comparison", "/compare"}, {"Lineage", "/lineage"}, {"Head", "/entry/head"}}

// funcs are the helpers every template may call.
var funcs = template.FuncMap{
	"runURL":   runURL,
	"entryURL": func(seq int64) string { return "/entry/" + strconv.FormatInt(seq, 10) },
	"short":    shortDigest,
	"pageURL":  pageURL,
	"add":      func(a, b int) int { return a + b },
	"list":     func(b blobCheck) []blobCheck { return []blobCheck{b} },
	"add64":    func(a, b int64) int64 { return a + b },
	"trunc":    truncate,
	// The report's number formats, so a figure reads the same here.
	"signed":         reports.Signed,
	"signedInterval": reports.SignedInterval,
	"pvalue":         reports.PValue,
	"value":          reports.Value,
}

// runURL is the address of run id's page; the id goes in the query, where
// any bytes survive (a path would be cleaned of "..", "//").
func runURL(id string) string { return "/run?" + url.Values{"id": {id}}.Encode() }

// shortDigest is a digest's first 12 hex digits, as the report prints it.
func shortDigest(d ledger.Digest) string {
	s := strings.TrimPrefix(d.String(), "blake3:")
	return s[:min(12, len(s))]
}

// pageURL is the current request's URL with its page query set to n.
func pageURL(u *url.URL, n int) string {
	q := u.Query()
	q.Set("page", strconv.Itoa(n))
	return u.Path + "?" + q.Encode()
}

// truncate is s cut to n runes with an ellipsis, for a box that has room
// for no more (the whole is its tooltip).
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// parsePages parses each page template with the layout, into its own set,
// so each may define its "content".
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("ui template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render answers page name with body inside the layout. The page is built
// whole before anything is sent, so an error gives the error page, not
// half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, name, title string, body any) error {
	t, ok := s.pages[name]
	if !ok {
		return fmt.Errorf("ui: no page template %q", name)
	}
	p := page{Title: title, Nav: nav, Body: body}
	if h, err := s.l.Head(r.Context()); err == nil {
		p.Head = &h
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		return err
	}
	writeHTML(w, http.StatusOK, b.Bytes())
	return nil
}

// writeHTML sends an HTML page with every control character made visible.
func writeHTML(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(visible(string(b))))
}

// visible is s with every character a terminal or a browser would act on
// rather than show (ESC, BEL, bidirectional overrides, bytes that are not
// UTF-8) written as its Go escape (ledger.Printable); newlines, carriage
// returns and tabs stay, as the page's own layout. html/template escapes
// markup; this makes what it lets through, a ledger's control
// characters, show as text on every page at once.
func visible(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexAny(s, "\n\r\t")
		if i < 0 {
			b.WriteString(ledger.Printable(s))
			return b.String()
		}
		b.WriteString(ledger.Printable(s[:i]))
		b.WriteByte(s[i])
		s = s[i+1:]
	}
}

// duration is how long a run took, from its start and end times as
// recorded (RFC 3339); "" when it has not ended or a time does not parse.
func duration(start, end string) string {
	a, err1 := time.Parse(time.RFC3339Nano, start)
	b, err2 := time.Parse(time.RFC3339Nano, end)
	if end == "" || err1 != nil || err2 != nil {
		return ""
	}
	return b.Sub(a).Round(time.Millisecond).String()
}
