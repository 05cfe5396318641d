package ui

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/ledger/records"
)

// serve starts a server of l on a loopback httptest server.
func serve(t *testing.T, l *ledger.Ledger, o Options) *httptest.Server {
	t.Helper()
	s, err := New(l, o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// get fetches path from ts and returns the response and its body.
func get(t *testing.T, ts *httptest.Server, method, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h := header.Get("Host"); h != "" {
		req.Host = h // the client sends req.Host, not a Host header
	}
	c := ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestReadOnlyAndHeaders: every method but GET and HEAD is refused with
// 405 and an Allow header, and every answer (pages, errors, assets)
// carries the security headers.
func TestReadOnlyAndHeaders(t *testing.T) {
	ts := serve(t, ledgertest.New(t), Options{Loopback: true})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		resp, _ := get(t, ts, m, "/runs", nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /runs: %d, Allow %q; want 405, GET, HEAD", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/runs", 200}, {http.MethodHead, "/runs", 200}, {http.MethodGet, "/static/ui.css", 200},
		{http.MethodGet, "/nowhere", 404}, {http.MethodGet, "/runs?page=0", 400},
	} {
		resp, _ := get(t, ts, tt.method, tt.path, nil)
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.status)
		}
		for h, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; frame-ancestors 'none'",
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := resp.Header.Get(h); !strings.HasPrefix(got, want) {
				t.Errorf("%s %s: %s %q, want %q", tt.method, tt.path, h, got, want)
			}
		}
	}
	// A name rebound to 127.0.0.1 by a web page's DNS is not this server.
	resp, _ := get(t, ts, http.MethodGet, "/runs", http.Header{"Host": {"attacker.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host attacker.example: %d, want 403", resp.StatusCode)
	}
}

// TestToken: a server with a token answers only requests that carry it,
// by header or by the cookie a ?token= query sets.
func TestToken(t *testing.T) {
	const token = "0123456789abcdef"
	ts := serve(t, ledgertest.New(t), Options{Token: token})
	for _, h := range []http.Header{nil, {"Authorization": {"Bearer wrong"}}, {"Cookie": {TokenCookie + "=wrong"}}} {
		if resp, _ := get(t, ts, http.MethodGet, "/runs", h); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%v: %d, want 401", h, resp.StatusCode)
		}
	}
	if resp, _ := get(t, ts, http.MethodGet, "/runs?token=wrong", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("?token=wrong: %d, want 401", resp.StatusCode)
	}
	if resp, _ := get(t, ts, http.MethodGet, "/runs", http.Header{"Authorization": {"Bearer " + token}}); resp.StatusCode != 200 {
		t.Errorf("Bearer token: %d, want 200", resp.StatusCode)
	}
	resp, _ := get(t, ts, http.MethodGet, "/runs?stage=sft&token="+token, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs?stage=sft" {
		t.Fatalf("?token=: %d to %q, want 303 to /runs?stage=sft", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie string
	for _, c := range resp.Cookies() {
		if c.Name == TokenCookie && c.HttpOnly && c.SameSite == http.SameSiteStrictMode {
			cookie = c.Name + "=" + c.Value
		}
	}
	if r, _ := get(t, ts, http.MethodGet, "/runs", http.Header{"Cookie": {cookie}}); r.StatusCode != 200 {
		t.Errorf("cookie %q: %d, want 200", cookie, r.StatusCode)
	}
}

// TestCheckAddr: off loopback, a token is required.
func TestCheckAddr(t *testing.T) {
	for _, tt := range []struct {
		addr, token string
		loopback    bool
		err         bool
	}{
		{"127.0.0.1:8765", "", true, false}, {"[::1]:0", "", true, false}, {"localhost:80", "", true, false},
		{"0.0.0.0:8765", "", false, true}, {":8765", "", false, true}, {"192.0.2.1:80", "", false, true},
		{"0.0.0.0:8765", "t", false, false}, {"nohostport", "", false, true},
	} {
		lb, err := CheckAddr(tt.addr, tt.token)
		if lb != tt.loopback || (err != nil) != tt.err {
			t.Errorf("CheckAddr(%q, %q) = %v, %v; want loopback %v, error %v", tt.addr, tt.token, lb, err, tt.loopback, tt.err)
		}
	}
}

// TestVisible: control characters show as escapes; the page's own
// newlines and tabs stay.
func TestVisible(t *testing.T) {
	got := visible("a\x1b[2J\tb\nc\u202e\xff\a")
	if want := "a\\x1b[2J\tb\nc\\u202e\\xff\\a"; got != want {
		t.Errorf("visible = %q, want %q", got, want)
	}
}

// TestBlobRehash: an entry's page re-hashes the blobs it names: a blob
// whose bytes changed shows corrupt, a removed one missing.
func TestBlobRehash(t *testing.T) {
	l := ledgertest.New(t)
	ctx := context.Background()
	var ds []ledger.Digest
	for _, b := range []string{"kept", "changed", "removed"} {
		d, err := l.PutBlobBytes([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if _, err := l.Append(ctx, ledger.Record{Kind: records.KindRunStart, Run: "r1", Body: ledger.RunStart{Stage: "s"}, Blobs: ds}); err != nil {
		t.Fatal(err)
	}
	path := func(d ledger.Digest) string {
		h := strings.TrimPrefix(d.String(), "blake3:")
		return filepath.Join(l.BlobsLocation(), h[:2], h)
	}
	if err := os.Chmod(path(ds[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path(ds[1]), []byte("CHANGED"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path(ds[2])); err != nil {
		t.Fatal(err)
	}
	ts := serve(t, l, Options{Loopback: true})
	_, page := get(t, ts, http.MethodGet, "/entry/2", nil)
	for i, want := range []string{"ok", "corrupt", "missing"} {
		if !strings.Contains(page, `<span class="blob-`+want+`"><code title="`+ds[i].String()+`">`) {
			t.Errorf("blob %s: not shown %s", ds[i], want)
		}
	}
	// Put back what verify (at the test's end) would rightly refuse.
	os.WriteFile(path(ds[1]), []byte("changed"), 0o444)
	os.WriteFile(path(ds[2]), []byte("removed"), 0o444)
}
