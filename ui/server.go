package ui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rlgate/rlgate/ledger"
)

// DefaultAddr is where rlgate ui listens unless told otherwise: loopback,
// so the ledger is shown to this machine's user only.
const DefaultAddr = "127.0.0.1:8765"

// TokenCookie is the cookie a ?token= query sets, so that the links of a
// page opened with the token carry it without repeating it in every URL.
const TokenCookie = "rlgate_ui_token"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Options say whom a Server answers.
type Options struct {
	// Token, when set, must come with every request: as the header
	// "Authorization: Bearer TOKEN", as the TokenCookie cookie, or as a
	// ?token= query, which sets the cookie and redirects to the URL
	// without it.
	Token string
	// Loopback says the server listens on a loopback address: a request
	// whose Host is not a loopback name is refused, so a web page the
	// user visits cannot reach the server through a DNS name rebound to
	// 127.0.0.1.
	Loopback bool
}

// Server answers the pages of one ledger.
type Server struct {
	l     *ledger.Ledger
	opts  Options
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// handler is a page's handler: an error it returns becomes the error page
// (httpError's status, else 404 for ledger.ErrNotFound, else 500).
type handler func(w http.ResponseWriter, r *http.Request) error

// httpError is an error a request caused, with the status to answer.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// New returns a server of l, which the caller opened read-only and closes
// after the server is done.
func New(l *ledger.Ledger, o Options) (*Server, error) {
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{l: l, opts: o, pages: pages, mux: http.NewServeMux()}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.route()
	return s, nil
}

// handle registers h for the GET (and so HEAD) requests of pattern.
func (s *Server) handle(pattern string, h handler) {
	s.mux.HandleFunc("GET "+pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

// ServeHTTP sets the security headers on every answer, refuses every
// method but GET and HEAD, checks the host and the token, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "rlgate ui is read-only: only GET and HEAD are answered", http.StatusMethodNotAllowed)
		return
	}
	if s.opts.Loopback && !loopbackHost(r.Host) {
		http.Error(w, "rlgate ui answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])", http.StatusForbidden)
		return
	}
	if s.opts.Token != "" && !s.authorized(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// authorized checks the request's token, answering when it is missing or
// wrong; a right ?token= sets the cookie and redirects to the URL without
// it, so the token leaves the address bar and the history.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query(); q.Has("token") {
		if !s.tokenIs(q.Get("token")) {
			http.Error(w, "wrong token: use the one rlgate ui printed", http.StatusUnauthorized)
			return false
		}
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: s.opts.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenIs(a) {
		return true
	}
	if c, err := r.Cookie(TokenCookie); err == nil && s.tokenIs(c.Value) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="rlgate ui"`)
	http.Error(w, "this rlgate ui needs its token: open the URL it printed (with ?token=) or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
	return false
}

// tokenIs compares in constant time, so the answer's timing tells nothing
// of how much of a guess was right.
func (s *Server) tokenIs(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) == 1
}

// loopbackHost tells whether a request's Host names this machine's
// loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckAddr refuses a listening address that is not loopback when no
// token is given: the ledger would be open to the network. It tells
// whether addr is loopback.
func CheckAddr(addr, token string) (loopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr %q: want HOST:PORT, such as %s: %w", addr, DefaultAddr, err)
	}
	ip := net.ParseIP(host)
	loopback = strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
	if !loopback && token == "" {
		return false, fmt.Errorf("--addr %s is not a loopback address, and anyone who can reach it would read the ledger: give --token TOKEN, or --token generate for a new one", addr)
	}
	return loopback, nil
}

// NewToken returns 32 random hex digits for --token generate.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Serve listens on addr and serves s until ctx is done, then returns
// ctx's error; ready, when not nil, is called with the address listened on (the port chosen when addr
// gives 0) once requests are accepted.
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w; give another --addr", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			return err
		}
		return ctx.Err()
	}
}

// URL is the address a browser opens for a server listening on addr,
// with the token as a query when there is one.
func URL(addr net.Addr, token string) string {
	u := url.URL{Scheme: "http", Host: addr.String(), Path: "/"}
	if token != "" {
		u.RawQuery = url.Values{"token": {token}}.Encode()
	}
	return u.String()
}

// fail answers the error page for err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var he *httpError
	switch {
	case errors.As(err, &he):
		status = he.status
	case errors.Is(err, ledger.ErrNotFound):
		status = http.StatusNotFound
	}
	var b bytes.Buffer
	if e := s.pages["error"].ExecuteTemplate(&b, "layout", page{Title: http.StatusText(status), Nav: nav, Body: err.Error()}); e != nil {
		http.Error(w, visible(err.Error()), status)
		return
	}
	writeHTML(w, status, b.Bytes())
}
