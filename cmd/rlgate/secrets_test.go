package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rlgate/rlgate/lab/refpolicy"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/runner"
)

// base64Run is a run of base64 text long enough to hold a secret: a
// signed bundle carries its statement base64-encoded.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{24,}={0,2}`)

// secretsIn returns the planted secrets found in data, as written or
// inside base64 text, each as "SECRET in NAME".
func secretsIn(name string, data []byte, secrets []string) []string {
	for _, run := range base64Run.FindAll(data, -1) {
		if dec, err := base64.StdEncoding.DecodeString(string(run)); err == nil {
			data = append(data, dec...)
		}
	}
	var found []string
	for _, s := range secrets {
		if bytes.Contains(data, []byte(s)) {
			found = append(found, s+" in "+name)
		}
	}
	return found
}

// secretsLeaked returns the planted secrets found anywhere in a directory
// (a ledger: every byte of ledger.db, its -wal and -shm, and every blob; a
// bundle; a report), as written or inside base64 text.
func secretsLeaked(t *testing.T, ldir string, secrets []string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(ldir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = append(found, secretsIn(strings.TrimPrefix(path, ldir), data, secrets)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// openRun opens the ledger at ldir for the rest of the test and returns
// it with run's entries.
func openRun(t *testing.T, ldir, run string) (*ledger.Ledger, []ledger.Entry) {
	t.Helper()
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var entries []ledger.Entry
	for e, err := range l.Entries(context.Background(), ledger.Filter{Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	return l, entries
}

// runPrinting runs rlgate run with args, and checks that the stage saw
// the real values: the terminal shows every secret it printed.
func runPrinting(t *testing.T, secrets []string, args ...string) {
	t.Helper()
	code, out, errOut := rlgate(t, args...)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	for _, s := range secrets {
		if !strings.Contains(out+errOut, s) {
			t.Errorf("the stage did not print %q: the real value did not reach it", s)
		}
	}
}

func TestSecretsRunNeverReachTheLedger(t *testing.T) {
	ldir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	env := map[string]string{
		"HF_ENDPOINT":    "https://hfuser:hfpass-7781@hf.example.org", // recorded, a password in the URL
		"HF_TOKEN":       "hf_tok_5521xyz",                            // recorded, secret by name
		"WANDB_ACCESS":   "wandb-acc-3391",                            // *_ACCESS
		"SLURM_JOB_PASS": "slurm-pass-4410",                           // *_PASS
		"MY_DB_PASSWORD": "hunter2",                                   // not recorded, but printed
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	secrets := []string{"hfpass-7781", "hf_tok_5521xyz", "wandb-acc-3391", "slurm-pass-4410", "hunter2",
		"param-key-6612", "argv-tok-9902", "argv-auth-1203", "argv-key-5504", "argv-pw-8805", "argv-q-7706"}
	// The stage prints every secret it was given, one of them split across
	// two writes.
	script := `echo "$MY_DB_PASSWORD $HF_ENDPOINT $WANDB_ACCESS $SLURM_JOB_PASS"; echo "$HF_TOKEN" >&2
echo "param $RLGATE_PARAM_API_KEY args $*"
printf hun; sleep 0.1; printf 'ter2\n'`
	argv := []string{"sh", "-c", script, "sh", "--token", "argv-tok-9902", "--auth=argv-auth-1203", "API_KEY=argv-key-5504",
		"--endpoint", "http://u:argv-pw-8805@127.0.0.1:9/v1?api_key=argv-q-7706&model=m"}
	args := append([]string{"--ledger", ldir, "run", "--stage", "secrets", "--run", "s1", "--gpu", "off",
		"--param", "api_key=param-key-6612", "--param", "lr=1e-6", "--"}, argv...)
	runPrinting(t, secrets, args...)
	if leaked := secretsLeaked(t, ldir, secrets); len(leaked) > 0 {
		t.Errorf("secrets in the ledger: %v", leaked)
	}

	l, entries := openRun(t, ldir, "s1")
	var start runner.StartBody
	var stdout bytes.Buffer
	masked := 0
	for _, e := range entries {
		switch e.Kind {
		case records.KindRunStart:
			json.Unmarshal(e.Body, &start)
		case records.KindLog:
			var c runner.LogChunk
			json.Unmarshal(e.Body, &c)
			masked += c.Masked
			if c.Stream == "stdout" {
				b, _ := l.ReadBlob(e.Blobs[0])
				stdout.Write(b)
			}
		}
	}
	for _, f := range []string{"argv[5]", "argv[6]", "argv[7]", "argv[9]", "env.HF_ENDPOINT", "env.HF_TOKEN",
		"env.SLURM_JOB_PASS", "env.WANDB_ACCESS", "params.api_key"} {
		if !slices.Contains(start.Redacted, f) {
			t.Errorf("run.start redacted = %v, lacks %s", start.Redacted, f)
		}
	}
	wantArgv := append(slices.Clone(argv[:5]), ledger.Redacted, "--auth="+ledger.Redacted, "API_KEY="+ledger.Redacted,
		"--endpoint", "http://"+ledger.Redacted+"@127.0.0.1:9/v1?api_key="+ledger.Redacted+"&model=m")
	if !slices.Equal(start.Argv, wantArgv) {
		t.Errorf("recorded argv %q, want %q", start.Argv, wantArgv)
	}
	if start.Params["lr"] != "1e-6" || start.Env["HF_ENDPOINT"] != "https://"+ledger.Redacted+"@hf.example.org" {
		t.Errorf("plain values changed: params %v, HF_ENDPOINT %q", start.Params, start.Env["HF_ENDPOINT"])
	}
	if !strings.Contains(stdout.String(), "param "+ledger.Redacted+" args") || masked == 0 {
		t.Errorf("recorded stdout %q (%d masked)", stdout.String(), masked)
	}
}

func TestSecretsRolloutEndpoint(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	backend := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	// The front door checks the credentials the rollout sends, then passes
	// the request on to the scripted server.
	// The first completion request has its connection dropped, so the
	// rollout records a retried attempt whose error names the URL.
	var mu sync.Mutex
	var users, keys []string
	dropped := false
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, _ := r.BasicAuth()
		mu.Lock()
		users = append(users, user+":"+pw)
		keys = append(keys, r.URL.RawQuery)
		drop := !dropped && strings.HasSuffix(r.URL.Path, "/chat/completions")
		dropped = dropped || drop
		mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if user != "rollout-user" || pw != "pw-rollout-4471" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	endpoint := strings.Replace(front.URL, "http://", "http://rollout-user:pw-rollout-4471@", 1) + "/v1?api_key=rollout-q-key-8832"
	code, out, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", endpoint, "--model", "scripted",
		"--run", "r1", "--limit", "2", "--json")
	if code != 0 {
		t.Fatalf("rollout: exit %d: %s", code, errOut)
	}
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Status != "ok" || s.Episodes != 2 {
		t.Fatalf("summary %+v: %v", s, err)
	}
	mu.Lock()
	for i := range users {
		if users[i] != "rollout-user:pw-rollout-4471" || keys[i] != "api_key=rollout-q-key-8832" {
			t.Errorf("request %d sent user %q, query %q", i, users[i], keys[i])
		}
	}
	if !dropped {
		t.Error("no connection was dropped: the test did not exercise a retried attempt")
	}
	mu.Unlock()
	if leaked := secretsLeaked(t, ldir, []string{"pw-rollout-4471", "rollout-q-key-8832"}); len(leaked) > 0 {
		t.Errorf("secrets in the ledger: %v", leaked)
	}
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start, err := rollout.ReadStart(context.Background(), l, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(front.URL, "http://", "http://"+ledger.Redacted+"@", 1) + "/v1?api_key=" + ledger.Redacted; start.Endpoint != want {
		t.Errorf("recorded endpoint %q, want %q", start.Endpoint, want)
	}
}

// rolloutOK runs a command line ending in rollout --json and returns its
// summary, which must say ok with episodes episodes.
func rolloutOK(t *testing.T, episodes int, args ...string) rollout.Summary {
	t.Helper()
	code, out, errOut := rlgate(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", args[len(args)-1], code, errOut)
	}
	var s rollout.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Status != "ok" || s.Episodes != episodes {
		t.Fatalf("rollout summary %+v: %v", s, err)
	}
	return s
}

// echoGateway is a front door as some gateways are: it checks the bearer
// token, passes requests on to the scripted server, and echoes every
// request's headers and URL in its replies, in the error body of the
// first completion request (a 503, retried) and beside the choices of
// every other one.
func echoGateway(t *testing.T, key string) *httptest.Server {
	t.Helper()
	backend := rollouttest.New(t, rollouttest.ThreeTurns(nil))
	target, _ := url.Parse(backend.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	failed := false
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo := map[string]any{"headers": r.Header, "url": r.URL.String()}
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": "bad key", "request": echo})
			return
		}
		mu.Lock()
		fail := !failed && strings.HasSuffix(r.URL.Path, "/chat/completions")
		failed = failed || fail
		mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]any{"error": "overloaded", "request": echo})
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		var reply map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		reply["request"] = echo
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(front.Close)
	return front
}

// TestSecretsRolloutEchoedNeverReachTheLedger: the --api-key-env token and
// a ?api_key= value that a gateway echoes in its replies are masked in
// every recorded body, and the probe's error names the endpoint without
// them.
func TestSecretsRolloutEchoedNeverReachTheLedger(t *testing.T) {
	ldir, data := spiderLedger(t)
	const key, query = "rk-bearer-55120917", "qv-77312-gw"
	front := echoGateway(t, key)
	endpoint := front.URL + "/v1?api_key=" + query
	t.Setenv("GW_KEY", "wrong-key-40913")
	code, _, errOut := rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", endpoint, "--model", "scripted",
		"--api-key-env", "GW_KEY", "--run", "r0", "--limit", "2")
	if code != exitError || !strings.Contains(errOut, "status 401") || strings.Contains(errOut, query) {
		t.Errorf("rollout with a refused key: exit %d, %q; want exit 1 naming status 401 without the query value", code, errOut)
	}
	code, _, errOut = rlgate(t, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", rollouttest.Refusing(t)+"/v1?api_key="+query,
		"--model", "scripted", "--run", "r0", "--limit", "2")
	if code != exitError || !strings.Contains(errOut, "endpoint unusable") || strings.Contains(errOut, query) {
		t.Errorf("rollout to a refusing port: exit %d, %q; want exit 1 without the query value", code, errOut)
	}
	t.Setenv("GW_KEY", key)
	rolloutOK(t, 3, "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", endpoint, "--model", "scripted",
		"--api-key-env", "GW_KEY", "--run", "r1", "--limit", "3", "--json")
	if leaked := secretsLeaked(t, ldir, []string{key, query, "wrong-key-40913"}); len(leaked) > 0 {
		t.Errorf("secrets in the ledger: %v", leaked)
	}
	// The echoes were recorded, masked: the test saw what it plants.
	l, err := ledger.Open(context.Background(), ldir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	eps := rollouttest.Episodes(t, l, "r1")
	retried, echoed := 0, 0
	for _, ep := range eps {
		for _, tr := range ep.Turns {
			for _, a := range tr.Retried {
				if a.Status == http.StatusServiceUnavailable && strings.Contains(string(a.Response), "Bearer "+ledger.Redacted) {
					retried++
				}
			}
			if strings.Contains(string(tr.Response), "api_key="+ledger.Redacted) && tr.Reply != "" {
				echoed++
			}
		}
	}
	if retried != 1 || echoed == 0 {
		t.Errorf("%d retried attempts and %d replies hold the masked echo; want 1 and some", retried, echoed)
	}
}

// plantedRun runs one stage through rlgate run with a secret on every
// path a run records (a config file, an sh -c header, allow-listed
// variables holding secrets, a parameter whose value is a key, output
// naming secrets by name and by shape), then the shell command then, and
// returns the secrets planted.
func plantedRun(t *testing.T, ledgerArgs []string, then string, extra ...string) []string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "train.yaml")
	yaml := "# run settings\nlr: 1e-6\nwandb_api_key: wandb-cfg-31337abc\nopenai:\n  api_key: \"oa-cfg-key-2718\"\n  model: gpt-4o\n" +
		"headers: [\"Authorization: Bearer cfg-bearer-99123\"]\ndata_path: /data/x\npatience: 3\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_HUB_HEADERS", "Authorization: Bearer hfhdr-41822xyz")
	t.Setenv("RLGATE_DB_URL_OPTS", "sslmode=require password=rlg-pw-66031")
	t.Setenv("MYSQL_PWD", "mysql-pw-50271")
	t.Setenv("GH_PAT", "ghpat-plain-80913")
	secrets := []string{"wandb-cfg-31337abc", "oa-cfg-key-2718", "cfg-bearer-99123", "hfhdr-41822xyz", "rlg-pw-66031",
		"mysql-pw-50271", "ghpat-plain-80913", "argv-bearer-17711", "sk-proj-PARAMab12cd34ef56gh78",
		"T0AAA/B0BBB/slackhook7713", "ghp_0123456789abcdefghijABCDEF012345"}
	script := `cat "$1"; echo curl -s -H "Authorization: Bearer argv-bearer-17711" http://127.0.0.1:9/
echo "MYSQL_PWD=$MYSQL_PWD GH_PAT=$GH_PAT"
echo "key $RLGATE_PARAM_OPENAI hook https://hooks.slack.com/services/T0AAA/B0BBB/slackhook7713"
echo "token ghp_0123456789abcdefghijABCDEF012345 headers $HF_HUB_HEADERS opts $RLGATE_DB_URL_OPTS"
` + then
	args := append(slices.Clone(ledgerArgs), "run", "--stage", "secrets", "--gpu", "off", "--config", cfg,
		"--param", "openai=sk-proj-PARAMab12cd34ef56gh78", "--param", "patience=3")
	args = append(args, extra...)
	args = append(args, "--", "sh", "-c", script, "sh", cfg)
	runPrinting(t, secrets, args...)
	return secrets
}

// TestSecretsPlantedRunNeverReachTheLedger: every secret of plantedRun is
// absent from every byte of the ledger directory; what is not secret
// (data_path, patience) is kept, and the config records the digest of the
// file as written.
func TestSecretsPlantedRunNeverReachTheLedger(t *testing.T) {
	ldir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", ldir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	secrets := plantedRun(t, []string{"--ledger", ldir}, "", "--run", "p1")
	if leaked := secretsLeaked(t, ldir, secrets); len(leaked) > 0 {
		t.Errorf("secrets in the ledger: %v", leaked)
	}
	l, entries := openRun(t, ldir, "p1")
	var start runner.StartBody
	var config struct {
		Digest    ledger.Digest  `json:"digest"`
		Canonical *ledger.Digest `json:"canonical"`
		Original  *ledger.Digest `json:"original"`
		Redacted  []string       `json:"redacted"`
	}
	for _, e := range entries {
		switch e.Kind {
		case records.KindRunStart:
			json.Unmarshal(e.Body, &start)
		case records.KindArtifact:
			json.Unmarshal(e.Body, &config)
		}
	}
	if start.Params["patience"] != "3" || start.Params["openai"] != ledger.Redacted || start.Env["HF_HUB_HEADERS"] != "Authorization: Bearer "+ledger.Redacted {
		t.Errorf("recorded params %v, HF_HUB_HEADERS %q", start.Params, start.Env["HF_HUB_HEADERS"])
	}
	raw, err := l.ReadBlob(config.Digest)
	if err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(start.Argv[4])
	if config.Original == nil || *config.Original != ledger.Sum(written) || !strings.Contains(string(raw), "data_path: /data/x\npatience: 3") ||
		!strings.HasPrefix(string(raw), "# run settings\n") {
		t.Errorf("config stored as %q, original %v (file %s)", raw, config.Original, ledger.Sum(written))
	}
	if want := []string{"headers[0]", "openai.api_key", "wandb_api_key"}; !slices.Equal(config.Redacted, want) {
		t.Errorf("config redacted %v, want %v", config.Redacted, want)
	}
}

// TestSecretsMaskLeavesRealRolloutAlone: a rollout of the reference
// policy (serve-policy) over every Spider dev task, real prompts with
// schemas and rows, real SQL replies and observations, with an API key
// and a secret query value to mask: no recorded line was changed by the
// masking (each is what the masker, given the same secrets, leaves alone),
// and no body holds the mark of a masked value.
func TestSecretsMaskLeavesRealRolloutAlone(t *testing.T) {
	ldir, data := spiderLedger(t)
	base, _ := policyInit(t, t.TempDir(), "1")
	const key, query = "sk-proj-realrollout0123456789ab", "qv-real-5512"
	t.Setenv("POLICY_KEY", key)
	t.Setenv("RLGATE_TEST_MAIN", "1") // the CMD below is this test binary acting as rlgate
	s := rolloutOK(t, 150, "serve-policy", "--ckpt", base, "--addr", "127.0.0.1:0", "--",
		os.Args[0], "--ledger", ldir, "rollout", "--tasks", data, "--endpoint", "{endpoint}?api_key="+query, "--model", refpolicy.ModelName,
		"--api-key-env", "POLICY_KEY", "--run", "real", "--limit", "150", "--json")
	var red ledger.Redactor
	red.Value("", "API_KEY", key)
	red.Value("", "", "http://127.0.0.1:1/v1?api_key="+query)
	mask := red.Masker()
	l, entries := openRun(t, ldir, "real")
	lines, turns := 0, 0
	for _, e := range entries {
		if e.Kind != records.KindTrajectories {
			continue
		}
		blob, err := l.ReadBlob(e.Blobs[0])
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(blob) {
			lines++
			if got, err := mask.JSON(line); err != nil || !bytes.Equal(got, line) {
				t.Errorf("entry %d: the masker changes a recorded line (%v):\n%s", e.Seq, err, line)
			}
			var ep rollout.Episode
			if err := json.Unmarshal(line, &ep); err != nil {
				t.Fatal(err)
			}
			for _, tr := range ep.Turns {
				turns++
				if bytes.Contains(tr.Request, []byte(ledger.Redacted)) || bytes.Contains(tr.Response, []byte(ledger.Redacted)) {
					t.Errorf("episode %s#%d turn %d: a body was masked", ep.TaskID, ep.Sample, tr.Index)
				}
			}
		}
	}
	if lines != s.Episodes {
		t.Errorf("%d recorded lines, %d episodes", lines, s.Episodes)
	}
	t.Logf("%d episodes, %d turns recorded unmasked", lines, turns)
}
