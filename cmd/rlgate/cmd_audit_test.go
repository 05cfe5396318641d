package main

import (
	"bytes"
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
	"github.com/rlgate/rlgate/manifests"
)

func TestAuditWeightsCommand(t *testing.T) {
	t.Parallel()
	c := writeTestCheckpoints(t)
	m, err := manifests.BuildCheckpointManifest(t.Context(), c.Trained)
	if err != nil {
		t.Fatal(err)
	}
	trained := m.Identity
	base, err := manifests.BuildCheckpointManifest(t.Context(), c.Base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts audit.WeightsOptions
		code int
		want []string // in the text output
	}{
		{"pass", audit.WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.NoUpdate, Evaluated: &trained}, exitOK,
			[]string{"PASS trained-changed: 1 of 9 tensors changed", "│ f ", "PASS noupdate-identical", "PASS evaluated-is-trained", "weights audit passed"}},
		{"re-sharded trained copy", audit.WeightsOptions{Base: c.Base, Trained: c.Resharded, NoUpdate: c.NoUpdate, Evaluated: &trained}, exitOK,
			[]string{"PASS evaluated-is-trained"}},
		{"trained is base", audit.WeightsOptions{Base: c.Base, Trained: c.NoUpdate, NoUpdate: c.NoUpdate}, exitCheckFailed,
			[]string{"FAIL trained-changed: no tensor changed", "failed 1 of 2 checks"}},
		{"no-update differs", audit.WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.ChangedD}, exitCheckFailed,
			[]string{`FAIL noupdate-identical: the No-update control differs from the base in 1 of 9 tensors: "d"`}},
		{"no no-update", audit.WeightsOptions{Base: c.Base, Trained: c.Trained}, exitCheckFailed,
			[]string{"FAIL noupdate-identical: no No-update control given"}},
		{"evaluated base", audit.WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.NoUpdate, Evaluated: &base.Identity}, exitCheckFailed,
			[]string{"FAIL evaluated-is-trained", "; it is the base"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ledgertest.New(t) // verified when the test ends
			var out bytes.Buffer
			r, err := runAuditWeights(t.Context(), auditWeightsOptions{Dir: l.Dir(), Weights: tt.opts}, &out)
			if code := exitCode(t.Context(), err); code != tt.code {
				t.Errorf("exit %d (%v), want %d", code, err, tt.code)
			}
			for _, s := range tt.want {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			var n int
			for e, err := range l.Entries(t.Context(), ledger.Filter{Kind: records.KindWeights}) {
				if err != nil {
					t.Fatal(err)
				}
				var body audit.WeightsReport
				if err := json.Unmarshal(e.Body, &body); err != nil || e.Seq != r.Seq || body.OK != (tt.code == exitOK) || len(body.Findings) != len(r.Findings) {
					t.Errorf("entry %d (%v): %s", e.Seq, err, e.Body)
				}
				n++
			}
			if n != 1 {
				t.Errorf("%d %s entries, want 1", n, records.KindWeights)
			}
		})
	}
}

func TestAuditWeightsJSON(t *testing.T) {
	t.Parallel()
	c := writeTestCheckpoints(t)
	l := ledgertest.New(t)
	var out bytes.Buffer
	_, err := runAuditWeights(t.Context(), auditWeightsOptions{Dir: l.Dir(), JSON: true,
		Weights: audit.WeightsOptions{Base: c.Base, Trained: c.Trained, NoUpdate: c.ChangedD}}, &out)
	if code := exitCode(t.Context(), err); code != exitCheckFailed {
		t.Errorf("exit %d, want %d", code, exitCheckFailed)
	}
	var got struct {
		OK       bool `json:"ok"`
		Seq      int64
		NoUpdate struct {
			Manifest string `json:"manifest"`
		} `json:"noupdate"`
		Findings []struct {
			Check    string
			OK       bool
			Evidence map[string]any
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Seq == 0 || !strings.HasPrefix(got.NoUpdate.Manifest, "blake3:") || len(got.Findings) != 2 {
		t.Fatalf("--json: %s", out.Bytes())
	}
	if top := got.Findings[0].Evidence["top"].([]any); len(top) != 1 || top[0].(map[string]any)["name"] != "f" {
		t.Errorf("top layers %v", top)
	}
	if d := got.Findings[1].Evidence["differing"].([]any); len(d) != 1 || d[0].(map[string]any)["name"] != "d" {
		t.Errorf("differing tensors %v", d)
	}
}

func TestAuditWeightsNeedsLedger(t *testing.T) {
	t.Parallel()
	c := writeTestCheckpoints(t)
	_, err := runAuditWeights(t.Context(), auditWeightsOptions{Dir: filepath.Join(t.TempDir(), "none"),
		Weights: audit.WeightsOptions{Base: c.Base, Trained: c.Trained}}, new(bytes.Buffer))
	if code := exitCode(t.Context(), err); code != exitError || !strings.Contains(err.Error(), "rlgate init") {
		t.Errorf("exit %d (%v), want %d with a hint to rlgate init", code, err, exitError)
	}
}
