//go:build postgres

package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestPGWrongPasswordIsOneLine: a wrong password (and a missing database)
// on a server that asks for one is a single line naming the user, host
// and database and what to check, exit 1, without pgx's report of each
// attempt (a refused TLS one included) and without the password.
func TestPGWrongPasswordIsOneLine(t *testing.T) {
	c := ledgertest.StartPostgres(t)
	c.RequirePassword("right-horse")
	pgURL, blobs := pgSplit(t, c.URL)
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("rlgate", "wrong-battery")
	q := u.Query()
	q.Del("sslmode") // pgx then tries TLS first, and reports that attempt too
	u.RawQuery = q.Encode()
	host := u.Host
	noDB := *u
	noDB.User = url.UserPassword("rlgate", "right-horse")
	noDB.Path = "/no_such_db"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--ledger", u.String(), "--blobs", blobs, "runs"}, `open ledger postgres://rlgate:xxxxx@` + host + `/postgres: authentication failed for user "rlgate" at ` + host + `. Try: check the user and password`},
		{[]string{"--ledger", u.String(), "--blobs", blobs, "init"}, `authentication failed for user "rlgate" at ` + host},
		{[]string{"--ledger", noDB.String(), "--blobs", blobs, "head"}, `database "no_such_db" does not exist at ` + host + `. Try: createdb no_such_db`},
	} {
		code, out, errOut := rlgate(t, tt.args...)
		if code != exitError || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line with %q", tt.args[len(tt.args)-1], code, out, errOut, tt.want)
		}
		for _, leak := range []string{"wrong-battery", "right-horse", "tls", "SQLSTATE", "failed to connect"} {
			if strings.Contains(errOut, leak) {
				t.Errorf("%s: stderr holds %q: %s", tt.args[len(tt.args)-1], leak, errOut)
			}
		}
	}
}
