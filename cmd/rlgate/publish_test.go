package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/publish"
)

const publishOMS = "../../testdata/oms"

// publishGate gates the experiment and returns the exit code, the
// verdict's entry and outcome, and what became of the publish requests.
func publishGate(t *testing.T, x *gateExperiment) (int, int64, bool, []publish.RequestOutcome) {
	t.Helper()
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "gate", "--runs", x.runs, "--train", x.train, "--self-grade-sample", "40", "--json")
	var s struct {
		OK        bool                     `json:"ok"`
		Seq       int64                    `json:"seq"`
		Publishes []publish.RequestOutcome `json:"publishes"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("gate: exit %d: %v\n%s%s", code, err, out, errOut)
	}
	return code, s.Seq, s.OK, s.Publishes
}

// publishVerify runs verify-bundle and returns its exit code and the
// names of the checks that failed.
func publishVerify(t *testing.T, args ...string) (int, []string) {
	t.Helper()
	code, out, errOut := rlgate(t, append([]string{"verify-bundle", "--json"}, args...)...)
	var v publish.Verification
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("verify-bundle %v: exit %d: %v\n%s%s", args, code, err, out, errOut)
	}
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	if (code == exitCheckFailed) != (len(failed) > 0) || (code != exitOK && code != exitCheckFailed) {
		t.Errorf("verify-bundle %v: exit %d with failed checks %v: %s", args, code, failed, errOut)
	}
	return code, failed
}

// publishCopy copies a directory (a bundle or a reference model) for a
// test to change.
func publishCopy(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// publishFlip changes one byte of file at offset at (from the end when
// negative).
func publishFlip(t *testing.T, file string, at int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if at < 0 {
		at += len(b)
	}
	b[at] ^= 0x01
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPublishVerifyReference: verify-bundle accepts the OpenSSF reference
// signer's key and certificate signatures, rejects each after one byte of
// a model file changes, and rejects the spec's invalid vectors.
func TestPublishVerifyReference(t *testing.T) {
	t.Parallel()
	keys := filepath.Join(publishOMS, "reference-signer", "keys")
	for _, tc := range []struct{ dir, flag, file string }{
		{"v1.1.0-elliptic-key", "--public-key", "signing-key-pub.pem"},
		{"v1.0.1-elliptic-key", "--public-key", "signing-key-pub.pem"},
		{"v1.1.0-certificate", "--certificate-chain", "ca-cert.pem"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := publishCopy(t, filepath.Join(publishOMS, "reference-signer", tc.dir))
			args := []string{tc.flag, filepath.Join(keys, tc.file), "--ignore-path", filepath.Join(dir, "ignore-me"), dir}
			if code, failed := publishVerify(t, args...); code != exitOK {
				t.Fatalf("reference signature: exit %d, failed %v", code, failed)
			}
			publishFlip(t, filepath.Join(dir, "signme-2"), 0)
			if code, failed := publishVerify(t, args...); code != exitCheckFailed || !cmp.Equal(failed, []string{publish.CheckFiles}) {
				t.Errorf("one byte of signme-2 changed: exit %d, failed %v", code, failed)
			}
		})
	}
	for _, set := range []string{"invalid", "invalid-payload"} {
		vectors, err := filepath.Glob(filepath.Join(publishOMS, "spec-vectors", set, "*.json"))
		if err != nil || len(vectors) == 0 {
			t.Fatalf("no %s vectors: %v", set, err)
		}
		for _, f := range vectors {
			code, failed := publishVerify(t, "--public-key", filepath.Join(keys, "signing-key-pub.pem"), "--signature", f, t.TempDir())
			if code != exitCheckFailed || !cmp.Equal(failed, []string{publish.CheckSchema}) {
				t.Errorf("%s/%s: exit %d, failed %v", set, filepath.Base(f), code, failed)
			}
		}
	}
}

// TestPublishGated builds the gate's experiment and checks, through the
// CLI, that nothing is published without a passing gate for the model,
// that run --publish-to publishes only when one passes, and that the
// bundles written verify and fail after one byte changes.
func TestPublishGated(t *testing.T) {
	x := buildGateExperiment(t)
	key := filepath.Join(t.TempDir(), "signing.key")
	if code, _, errOut := rlgate(t, "keygen", "--out", key); code != exitOK {
		t.Fatalf("keygen: exit %d: %s", code, errOut)
	}
	if code, _, errOut := rlgate(t, "keygen", "--out", key); code != exitError || !strings.Contains(errOut, "never overwrites") {
		t.Errorf("keygen over an existing key: exit %d: %s", code, errOut)
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("private key mode %v: %v", fi.Mode(), err)
	}
	pub := key + ".pub"

	// No gate has run: publish is refused, and nothing is written.
	refused := filepath.Join(t.TempDir(), "refused")
	code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl", "--to", refused, "--key", key)
	if code != exitCheckFailed || !strings.Contains(errOut, "no gate verdict is for model "+x.identity["rl"].String()) {
		t.Errorf("publish before any gate: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused publish left %s: %v", refused, err)
	}

	// A training run asks to be published; a failing gate for its model
	// withholds it.
	auto := filepath.Join(t.TempDir(), "auto")
	x.trainRun(t, "rl", "train-rl-pub", x.written["rl"], "1e-6", 0.25, "--param", "lr=1e-6", "--publish-to", auto, "--publish-key", key)
	passingTrain := x.train
	x.trainRun(t, "rl", "train-rl-lr0", x.written["rl"], "0", 0.25, "--param", "lr=1e-6")
	beforeFailing := x.fork(t)
	code, failSeq, ok, outcomes := publishGate(t, x)
	if code != exitCheckFailed || ok || len(outcomes) != 1 || outcomes[0].Withheld == "" || outcomes[0].Run != "train-rl-pub" {
		t.Fatalf("failing gate: exit %d, ok %v, outcomes %+v", code, ok, outcomes)
	}
	if _, err := os.Stat(auto); !os.IsNotExist(err) {
		t.Errorf("a failing gate published to %s: %v", auto, err)
	}
	code, _, errOut = rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl", "--to", refused, "--key", key)
	if code != exitCheckFailed || !strings.Contains(errOut, fmt.Sprintf("verdict entry %d", failSeq)) {
		t.Errorf("publish after a failing gate: exit %d: %s", code, errOut)
	}

	t.Run("a passing gate: stage of repro publishes", func(t *testing.T) {
		y := beforeFailing
		y.train = passingTrain
		publishRepro(t, y, auto, pub)
		if err := os.RemoveAll(auto); err != nil { // for the gate below
			t.Fatal(err)
		}
	})

	// A passing gate after a failed one for the same model does not
	// publish unattended: the publisher must say why (no verdict
	// shopping), and the bundle states it.
	x.train = passingTrain
	code, passSeq, ok, outcomes := publishGate(t, x)
	if code != exitOK || !ok || len(outcomes) != 1 || !strings.Contains(outcomes[0].Withheld, fmt.Sprintf("failed (entries %d)", failSeq)) {
		t.Fatalf("passing gate after a failed one: exit %d, ok %v, outcomes %+v", code, ok, outcomes)
	}
	const reason = "the failed verdict gated an lr-0 run by mistake"
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl-pub", "--to", auto, "--key", key, "--after-failed-verdict", reason); code != exitOK {
		t.Fatalf("publish --after-failed-verdict: exit %d: %s", code, errOut)
	}
	code, out, _ := rlgate(t, "--ledger", x.ledger, "verify-bundle", auto, "--public-key", pub)
	if !strings.HasPrefix(out[strings.Index(out, "PUBLISHED AFTER"):], fmt.Sprintf("PUBLISHED AFTER A FAILED GATE VERDICT: %q", reason)) {
		t.Errorf("verify-bundle does not lead with the reason:\n%s", out)
	}
	if code != exitOK || !strings.Contains(out, fmt.Sprintf("gate verdict entry %d (passed", passSeq)) {
		t.Errorf("verify-bundle of the published run: exit %d:\n%s", code, out)
	}

	// By hand, now that the gate passed, into a directory whose parents
	// do not exist yet: publish makes them.
	bundle := filepath.Join(t.TempDir(), "pub", "rl", "bundle")
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl-pub", "--to", bundle, "--key", key, "--after-failed-verdict", reason); code != exitOK {
		t.Fatalf("publish: exit %d: %s", code, errOut)
	}
	// The bundle's report was written from the ledger: a reviewer
	// re-derives every number of it, and it states the gain as supported.
	if code, out, errOut := rlgate(t, "--ledger", x.ledger, "report", "--check", filepath.Join(bundle, publish.ReportDir)); code != exitOK {
		t.Errorf("report --check of the bundle's report: exit %d:\n%s%s", code, out, errOut)
	}
	if md, err := os.ReadFile(filepath.Join(bundle, publish.ReportDir, "report.md")); err != nil || strings.HasPrefix(string(md), "UNSUPPORTED") {
		t.Errorf("the bundle's report.md (err %v) starts %.80q", err, md)
	}
	// A training run of the same model with secrets planted on every path
	// a run records, gated and published: its bundle and a report hold
	// none of them.
	secretOut := filepath.Join(t.TempDir(), "ckpt")
	secretLog := filepath.Join(t.TempDir(), "secrets-metrics.jsonl")
	var metricsLog strings.Builder
	for step := 1; step <= 20; step++ {
		fmt.Fprintf(&metricsLog, `{"step": %d, "data": {"training/global_step": %d, "actor/lr": 1e-6, "critic/score/mean": 0.25, "actor/kl_loss": %g}}`+"\n", step, step, 0.01+0.0005*float64(step))
	}
	gateWrite(t, secretLog+".src", metricsLog.String())
	secrets := plantedRun(t, []string{"--ledger", x.ledger},
		fmt.Sprintf("mkdir -p %s && cp -r %s/. %s && cp %s.src %s", secretOut, x.written["rl"], secretOut, secretLog, secretLog),
		"--run", "train-rl-secrets", "--out", "ckpt="+secretOut, "--in", "base="+x.base, "--in", "data="+x.trainData["rl"], "--metrics", secretLog+":verl")
	x.train = gateSetLabel(passingTrain, "rl", "train-rl-secrets")
	if code, _, ok, _ := publishGate(t, x); code != exitOK || !ok {
		t.Fatalf("gate of the run with secrets: exit %d", code)
	}
	secretBundle := filepath.Join(t.TempDir(), "secret-bundle")
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl-secrets", "--to", secretBundle, "--key", key, "--after-failed-verdict", reason); code != exitOK {
		t.Fatalf("publish of the run with secrets: exit %d: %s", code, errOut)
	}
	for what, dir := range map[string]string{"bundle": secretBundle, "report": reportWrite(t, x.ledger), "ledger": x.ledger} {
		if leaked := secretsLeaked(t, dir, secrets); len(leaked) > 0 {
			t.Errorf("secrets in the %s: %v", what, leaked)
		}
	}
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "publish", "--run", "train-rl-secrets", "--to", bundle, "--key", key, "--after-failed-verdict", reason); code != exitError || !strings.Contains(errOut, "not empty") {
		t.Errorf("publish into a bundle: exit %d: %s", code, errOut)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	if code, _, errOut := rlgate(t, "--ledger", x.ledger, "run", "--stage", "rl", "--run", "train-rl-into-bundle", "--gpu", "off",
		"--publish-to", bundle, "--publish-key", key, "--", "touch", marker); code != exitError || !strings.Contains(errOut, "not empty") {
		t.Errorf("run --publish-to a bundle: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the stage ran although its --publish-to was refused")
	}
	if code, failed := publishVerify(t, "--public-key", pub, "--ledger", x.ledger, bundle); code != exitOK {
		t.Fatalf("verify-bundle: exit %d, failed %v", code, failed)
	}
	otherLedger := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", otherLedger, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	if code, failed := publishVerify(t, "--public-key", pub, "--ledger", otherLedger, bundle); code != exitCheckFailed ||
		!cmp.Equal(failed, []string{publish.CheckLedgerHead, publish.CheckLedgerVerdict, publish.CheckLedgerRederived, publish.CheckLedgerPublish}) {
		t.Errorf("verify-bundle against another ledger: exit %d, failed %v", code, failed)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	if code, _, errOut := rlgate(t, "keygen", "--out", other); code != exitOK {
		t.Fatal(errOut)
	}

	weights, err := filepath.Glob(filepath.Join(bundle, "*.safetensors"))
	if err != nil || len(weights) == 0 {
		t.Fatalf("no weights in the bundle: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, dir string)
		key    string
		failed []string
	}{
		{"one byte of a weight file", func(t *testing.T, dir string) { publishFlip(t, filepath.Join(dir, filepath.Base(weights[0])), -1) },
			pub, []string{publish.CheckFiles, publish.CheckProvenanceModel}},
		{"one byte of the statement", func(t *testing.T, dir string) {
			publishEditEnvelope(t, filepath.Join(dir, publish.SignatureFile), true)
		},
			pub, []string{publish.CheckSignature}},
		{"one byte of the signature", func(t *testing.T, dir string) {
			publishEditEnvelope(t, filepath.Join(dir, publish.SignatureFile), false)
		},
			pub, []string{publish.CheckSignature}},
		{"one byte of the provenance statement", func(t *testing.T, dir string) { publishEditProvenance(t, dir) },
			pub, []string{publish.CheckProvenanceSignature}},
		{"one byte of the report", func(t *testing.T, dir string) { publishFlip(t, filepath.Join(dir, publish.ReportDir, "report.md"), 2) },
			pub, []string{publish.CheckFiles}},
		{"another key", func(*testing.T, string) {}, other + ".pub", []string{publish.CheckKey, publish.CheckProvenanceSignature}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := publishCopy(t, bundle)
			tc.change(t, dir)
			if code, failed := publishVerify(t, "--public-key", tc.key, dir); code != exitCheckFailed || !cmp.Equal(tc.failed, failed) {
				t.Errorf("exit %d, failed %v, want %v", code, failed, tc.failed)
			}
		})
	}
}

// publishRepro runs a pipeline whose one stage is gated with a policy
// that holds for the experiment, and checks that the gate published the
// request waiting for the rl model to auto.
func publishRepro(t *testing.T, x *gateExperiment, auto, pub string) {
	t.Helper()
	dir := t.TempDir()
	gateWrite(t, filepath.Join(dir, "holds.yaml"), "claims: [\"rl > base\"]\naudits: [training]\n"+x.policySubjects())
	gateWrite(t, filepath.Join(dir, "rlgate.yaml"), `stages:
  gated:
    cmd: "mkdir -p out && echo gated > out/gated.txt"
    outs: {gated: out/gated.txt}
    gate: holds.yaml
    gpu: off
`)
	code, out, errOut := rlgate(t, "--ledger", x.ledger, "repro", "-f", filepath.Join(dir, "rlgate.yaml"))
	if code != exitOK || !strings.Contains(out, "published run train-rl-pub to "+auto) {
		t.Fatalf("repro: exit %d:\n%s%s", code, out, errOut)
	}
	if code, failed := publishVerify(t, "--public-key", pub, "--ledger", x.ledger, auto); code != exitOK {
		t.Errorf("verify-bundle of what repro published: exit %d, failed %v", code, failed)
	}
}

// publishEditEnvelope changes one byte of model.sig's DSSE payload (the
// statement) or of its signature, keeping both valid base64.
func publishEditEnvelope(t *testing.T, file string, payload bool) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var b map[string]any
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	env := b["dsseEnvelope"].(map[string]any)
	field, obj := "payload", env
	if !payload {
		obj = env["signatures"].([]any)[0].(map[string]any)
		field = "sig"
	}
	obj[field] = publishFlipB64(t, obj[field].(string), payload)
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// publishEditProvenance changes one byte of the provenance statement.
func publishEditProvenance(t *testing.T, dir string) {
	t.Helper()
	file := filepath.Join(dir, publish.ProvenanceFile)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	env["payload"] = publishFlipB64(t, env["payload"].(string), true)
	out, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// publishFlipB64 decodes s, changes one byte, and encodes it again: in a
// statement, the first letter of its subject's name (still JSON of the
// schema's shape, with every digest intact, so only the signature can
// tell); in a signature, its last byte.
func publishFlipB64(t *testing.T, s string, statement bool) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	i := len(b) - 1
	if statement {
		subject := strings.Index(string(b), `"subject":[`)
		i = subject + strings.Index(string(b[subject:]), `"name":"`) + len(`"name":"`)
		if subject < 0 || i < subject {
			t.Fatalf("no subject name in %s", b)
		}
	}
	b[i] ^= 0x01
	return base64.StdEncoding.EncodeToString(b)
}
