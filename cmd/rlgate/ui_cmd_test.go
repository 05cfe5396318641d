package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestUICommand: rlgate ui refuses a non-loopback address without a
// token; with --token generate it prints the URL with a new token, which
// every request must then carry; on loopback it needs none.
func TestUICommand(t *testing.T) {
	t.Parallel()
	dir := ledgerWithRuns(t, "sft=s1")
	for _, addr := range []string{"0.0.0.0:0", ":8765", "192.0.2.1:8765"} {
		code, _, errOut := rlgate(t, "--ledger", dir, "ui", "--addr", addr)
		if code != exitUsage || !strings.Contains(errOut, "--token") {
			t.Errorf("ui --addr %s without a token: exit %d: %s", addr, code, errOut)
		}
	}

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(u string, h http.Header) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct{ addr, token string }{{"0.0.0.0:0", "generate"}, {"127.0.0.1:0", ""}} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &lockedBuffer{}
		done := make(chan error, 1)
		go func() { done <- runUI(ctx, uiOptions{Dir: dir, Addr: tt.addr, Token: tt.token}, out) }()
		at := regexp.MustCompile(`at (http://\S+); stop with Ctrl-C`)
		var m []string
		for deadline := time.Now().Add(10 * time.Second); m == nil; m = at.FindStringSubmatch(string(out.Bytes())) {
			if time.Now().After(deadline) {
				t.Fatalf("ui --addr %s printed no URL: %q", tt.addr, out.Bytes())
			}
			time.Sleep(10 * time.Millisecond)
		}
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatal(err)
		}
		token := u.Query().Get("token")
		u.Host = strings.Replace(u.Host, "0.0.0.0", "127.0.0.1", 1)
		runs := "http://" + u.Host + "/runs"
		if tt.token == "" {
			if token != "" || status(runs, nil) != http.StatusOK {
				t.Errorf("loopback without a token: printed %s", m[1])
			}
		} else {
			if len(token) != 32 {
				t.Errorf("generated token %q, want 32 hex digits", token)
			}
			if s := status(runs, nil); s != http.StatusUnauthorized {
				t.Errorf("no token: %d, want 401", s)
			}
			if s := status(runs, http.Header{"Authorization": {"Bearer " + token}}); s != http.StatusOK {
				t.Errorf("Bearer token: %d, want 200", s)
			}
			if s := status(u.String(), nil); s != http.StatusSeeOther {
				t.Errorf("the printed URL: %d, want 303 (cookie set)", s)
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("ui ended with %v", err)
		}
	}
}
