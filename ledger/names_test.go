package ledger_test

import (
	"context"
	"github.com/rlgate/rlgate/ledger/records"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"rl-1", "eval base", "sft_2026-12-01T15:00", "Qwen2.5-7B (RL)", "модель", "数据集"} {
		if err := ledger.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", " rl", "rl ", "a\nb", "a\tb", "r\x1b[31m", "r\a", "eval\u202e", "zero\u200bwidth",
		"nb\u00a0sp", "c1\u009b", "bad\xffutf8", string(make([]byte, ledger.MaxNameLen+1))} {
		if err := ledger.CheckName(bad); err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", bad)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"rl-1 base":           "rl-1 base",
		"a\x1b]0;pwned\ab":    `a\x1b]0;pwned\ab`,
		"a\nb\tc\r":           `a\nb\tc\r`,
		"eval\u202eesab":      `eval\u202eesab`,
		"c1\u009b2J":          `c1\u009b2J`,
		"bad\xff":             `bad\xff`,
		"ok \ufffd модель 数据": "ok \ufffd модель 数据",
	} {
		if got := ledger.Printable(in); got != want {
			t.Errorf("Printable(%q) = %s, want %s", in, got, want)
		}
	}
}

// An artifact may be named by a config file's path, which can be longer
// than a name and end in a space: appends check only its characters.
func TestAppendAcceptsPathArtifactNames(t *testing.T) {
	l := ledgertest.New(t)
	name := "/home/me/" + strings.Repeat("deep/", 60) + "config.yaml "
	a := ledger.Artifact{Role: "config", Name: name, Kind: "config", Digest: ledger.Sum(nil)}
	if _, err := l.Append(context.Background(), ledger.Record{Kind: records.KindArtifact, Run: "", Body: a}); err != nil {
		t.Fatalf("artifact named by a %d-byte path: %v", len(name), err)
	}
}
