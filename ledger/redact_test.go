package ledger

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSecretName(t *testing.T) {
	secret := []string{"HF_TOKEN", "MY_DB_PASSWORD", "DB_PASS", "S3_ACCESS", "OPENAI_API_KEY", "APIKEY", "apiKey",
		"api_key", "access-token", "X-Amz-Signature", "X-Amz-Credential", "sig", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD",
		"GH_AUTH", "oauth", "passwordFile", "key", "secret", "password", "MYSQL_PWD", "GH_PAT", "db-pwd", "gitlabPat", "PAT_TOKEN"}
	plain := []string{"max_tokens", "TOKENIZERS_PARALLELISM", "XAUTHORITY", "lr", "HF_ENDPOINT", "CUDA_VISIBLE_DEVICES",
		"PWD", "OLDPWD", "endpoint", "model", "num_passes", "", "PATH", "path", "data_path", "patience", "early_stop_patience",
		"pat", "PATCH_SIZE", "spat", "pwdx", "MODEL_PATH"}
	for _, n := range secret {
		if !SecretName(n) {
			t.Errorf("SecretName(%q) = false, want true", n)
		}
	}
	for _, n := range plain {
		if SecretName(n) {
			t.Errorf("SecretName(%q) = true, want false", n)
		}
	}
}

func TestRedactValues(t *testing.T) {
	tests := []struct {
		name, key, value, want string
		secrets                []string
	}{
		{"secret name", "HF_TOKEN", "hf_abcdef", Redacted, []string{"hf_abcdef"}},
		{"plain", "lr", "1e-6", "1e-6", nil},
		{"url userinfo", "HF_ENDPOINT", "https://user:PASS@host/x", "https://" + Redacted + "@host/x", []string{"PASS"}},
		{"url token as user", "", "https://ghp_tok@github.com", "https://" + Redacted + "@github.com", []string{"ghp_tok"}},
		{"url query", "endpoint", "http://user:pw@h:8/v1?api_key=K1%2B&model=m&sig=S#frag",
			"http://" + Redacted + "@h:8/v1?api_key=" + Redacted + "&model=m&sig=" + Redacted + "#frag", []string{"pw", "K1%2B", "K1+", "S"}},
		{"two urls", "", "a=http://h/?token=T1 b=https://u:p2@g", "a=http://h/?token=" + Redacted + " b=https://" + Redacted + "@g", []string{"T1", "p2"}},
		{"url without secrets", "", "http://127.0.0.1:8000/v1?model=x", "http://127.0.0.1:8000/v1?model=x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Redactor
			if got := r.Value("f", tt.key, tt.value); got != tt.want {
				t.Errorf("Value = %q, want %q", got, tt.want)
			}
			if d := cmp.Diff(tt.secrets, secretList(&r), cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
				t.Errorf("secrets (-want +got):\n%s", d)
			}
			wantFields := []string(nil)
			if tt.secrets != nil {
				wantFields = []string{"f"}
			}
			if d := cmp.Diff(wantFields, r.Fields()); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
		})
	}
}

func secretList(r *Redactor) []string {
	if len(r.secrets) == 0 {
		return nil
	}
	var out []string
	for s := range r.secrets {
		out = append(out, s)
	}
	return out
}

func TestRedactArgv(t *testing.T) {
	argv := []string{"python", "train.py", "--token", "tok1", "--token=tok2", "-api-key=k3", "API_KEY=k4", "--lr", "1e-6",
		"--endpoint", "http://user:pw5@host/v1?api_key=k6", "--use-auth", "--verbose", "max_tokens=512",
		"sh -c 'serve --hf-token tok7 --port 1'", "--password", "two words"}
	want := []string{"python", "train.py", "--token", Redacted, "--token=" + Redacted, "-api-key=" + Redacted, "API_KEY=" + Redacted,
		"--lr", "1e-6", "--endpoint", "http://" + Redacted + "@host/v1?api_key=" + Redacted, "--use-auth", "--verbose", "max_tokens=512",
		"sh -c 'serve --hf-token " + Redacted + " --port 1'", "--password", Redacted}
	var r Redactor
	got := r.Argv("argv", argv)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Argv (-want +got):\n%s", d)
	}
	wantFields := []string{"argv[10]", "argv[14]", "argv[16]", "argv[3]", "argv[4]", "argv[5]", "argv[6]"}
	if d := cmp.Diff(wantFields, r.Fields()); d != "" {
		t.Errorf("fields (-want +got):\n%s", d)
	}
	for _, s := range []string{"tok1", "tok2", "k3", "k4", "pw5", "k6", "tok7"} {
		if !r.secrets[s] {
			t.Errorf("secret %q not collected", s)
		}
	}
}

// TestMaskerSplits feeds output holding secrets in every split into two
// writes, and in single bytes: no secret of MinMasked bytes or more
// survives, the rest of the output is unchanged, and shorter ones are left.
func TestMaskerSplits(t *testing.T) {
	var r Redactor
	r.Value("", "MY_DB_PASSWORD", "hunter2")
	r.Value("", "URL", "https://u:hunter2-long@h") // contains the shorter secret
	r.Value("", "SHORT_KEY", "abc")                // below MinMasked
	r.Value("", "OTHER_TOKEN", "aaab")
	text := "x hunter2 y hunter2-long z abc hunhunter2 aaaab hunte"
	want := "x [redacted] y [redacted] z abc hun[redacted] a[redacted] hunte"
	for cut := 0; cut <= len(text); cut++ {
		m := r.Masker()
		var got []byte
		for _, part := range []string{text[:cut], text[cut:]} {
			out, _ := m.Mask([]byte(part))
			got = append(got, out...)
		}
		out, _ := m.Flush()
		got = append(got, out...)
		if string(got) != want {
			t.Fatalf("split at %d: got %q, want %q", cut, got, want)
		}
	}
	m := r.Masker()
	var got []byte
	n := 0
	for i := range len(text) {
		out, k := m.Mask([]byte{text[i]})
		got, n = append(got, out...), n+k
	}
	out, k := m.Flush()
	got, n = append(got, out...), n+k
	if string(got) != want || n == 0 {
		t.Errorf("byte by byte: got %q (%d masked), want %q", got, n, want)
	}
	if strings.Contains(string(got), "hunter2") {
		t.Error("a secret survived")
	}
}

// TestMaskerValueRuleSplits: with no secret known, a secret found by the
// value rule is masked however the output is split into writes.
func TestMaskerValueRuleSplits(t *testing.T) {
	var none Redactor
	none.Value("", "lr", "1")
	text := "step 1 loss 0.5\nexport MYSQL_PWD=sqlpw-123 GH_PAT=pat-77\nhook https://hooks.slack.com/services/T01/B02/xyz\ndone"
	want := "step 1 loss 0.5\nexport MYSQL_PWD=[redacted] GH_PAT=[redacted]\nhook https://hooks.slack.com/services/[redacted]\ndone"
	for cut := 0; cut <= len(text); cut++ {
		m := none.Masker()
		var got []byte
		n := 0
		for _, part := range []string{text[:cut], text[cut:]} {
			out, k := m.Mask([]byte(part))
			got, n = append(got, out...), n+k
		}
		out, k := m.Flush()
		got, n = append(got, out...), n+k
		if string(got) != want || n != 3 {
			t.Fatalf("split at %d: got %q (%d masked), want %q (3)", cut, got, n, want)
		}
	}
}

// TestValueRule: each secret shape is masked where it stands, in a value
// without a secret name, and the text around it is kept.
func TestValueRule(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sk-proj-Ab3dE5gH7jK9mN1pQ3", "[redacted]"},
		{"key sk-ant-api03-xyzXYZ0123456789 end", "key [redacted] end"},
		{"ghp_0123456789abcdefghijABCDEFGHIJ", "[redacted]"},
		{"push github_pat_11AAAAAAA0123456789_abcdefghij", "push [redacted]"},
		{"HF hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "HF [redacted]"},
		{"slack xoxb-1234567890-abcdefghij", "slack [redacted]"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws [redacted]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "jwt [redacted]"},
		{"Authorization: Bearer tok-12345678", "Authorization: Bearer [redacted]"},
		{`-H "authorization: Basic dXNlcjpwdw=="`, `-H "authorization: Basic [redacted]"`},
		{"HF_HUB_HEADERS=Authorization: Bearer abc.def-123", "HF_HUB_HEADERS=Authorization: Bearer [redacted]"},
		{"db password=hunter-2 user=bob", "db password=[redacted] user=bob"},
		{"MYSQL_PWD=pw1 GH_PAT=pat2 PWD=/home/u", "MYSQL_PWD=[redacted] GH_PAT=[redacted] PWD=/home/u"},
		{"--db-password=pw3", "--db-password=[redacted]"},
		{"GET /v1/models?api_key=q-1&model=m", "GET /v1/models?api_key=[redacted]&model=m"},
		{`{"x-api-key": "k-9", "model": "m"}`, `{"x-api-key": "[redacted]", "model": "m"}`},
		{"X-Api-Key: k-10\nContent-Type: application/json", "X-Api-Key: [redacted]\nContent-Type: application/json"},
		{"https://hooks.slack.com/services/T0/B0/abc", "https://hooks.slack.com/services/[redacted]"},
		{"https://discord.com/api/webhooks/123/abc-DEF", "https://discord.com/api/webhooks/[redacted]"},
		{"git clone https://x:ghp_tok@github.com/a/b", "git clone https://[redacted]@github.com/a/b"},
		{"Authorization: Bearer [redacted]", "Authorization: Bearer [redacted]"},
	}
	for _, tt := range tests {
		var r Redactor
		got := r.Value("f", "", tt.in)
		if got != tt.want {
			t.Errorf("Value(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := r.Value("g", "", got); again != got || slices.Contains(r.Fields(), "g") {
			t.Errorf("Value(%q) masks again: %q", got, again)
		}
		for s := range r.secrets {
			if !strings.Contains(tt.in, s) || strings.Contains(got, s) {
				t.Errorf("Value(%q): secret %q not in the input or left in %q", tt.in, s, got)
			}
		}
	}
}

// FuzzRulePrefilter: the cheap check that lets maskLine skip a rule never
// skips a line on which the rule would mask a value: for a named rule
// (secretNameBefore), every match whose name is secret has the name seen
// before its separator; for the others, the rule finds no match at all.
func FuzzRulePrefilter(f *testing.F) {
	for _, s := range []string{
		"MYSQL_PWD=hunter2", `{"password" : "v", "n": 1}`, "X-Api-Key: abc123", "a.x-pass=v",
		"ApiKeyId=3", "--access-token=abc", `"api_key":"s"`, "Authorization: Bearer xyz",
		"config.db_password = x", `CREATE TABLE t (id INTEGER PRIMARY KEY); SELECT a=b`, "GH_PAT=ghp_x",
		"x-amz-signature :\tdeadbeef", `"ÄpiKey": "ü"`, "hf_token=\"q\"",
		"key sk-abcdefghijklmnopqrstu", "task-sk-abcdefghijklmnopqrstu", "Asia ASIAABCDEFGHIJKLMNOP", "(AKIAABCDEFGHIJKLMNOP)",
		"eyJabcdefghij.eyJabcdefghij.abcdefghij", "xoxb-1234567890ab", "https://hooks.slack.com/services/T0/B0/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lower := strings.ToLower(s)
		for _, r := range valueRules() {
			if r.may(s, lower) {
				continue
			}
			for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
				if !r.named {
					t.Fatalf("rule %s skipped on %q, which would mask %q", r.re, s, s[m[len(m)-2]:m[len(m)-1]])
				}
				if SecretName(s[m[2]:m[3]]) {
					t.Fatalf("rule %s skipped on %q, which would mask %q", r.re, s, s[m[4]:m[5]])
				}
			}
		}
	})
}

// TestMaskerJSONRemembers: a request that repeats the messages of the
// turns before it is masked as a first sight of each message would be,
// a secret in a repeated message included, while each long message is
// masked once.
func TestMaskerJSONRemembers(t *testing.T) {
	system := strings.Repeat("You answer with SQL. ", 20)
	leak := "the tool printed OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx while it ran; " + strings.Repeat("more output ", 30)
	turn := func(msgs ...string) []byte {
		var b strings.Builder
		b.WriteString(`{"model":"m","messages":[`)
		for i, m := range msgs {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"role":"user","content":"` + m + `"}`)
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	fresh := func(b []byte) string {
		out, err := (&Redactor{}).Masker().JSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	m := (&Redactor{}).Masker()
	for _, req := range [][]byte{turn(system), turn(system, leak), turn(system, leak, "short"), turn(system, leak, "short")} {
		got, err := m.JSON(req)
		if err != nil {
			t.Fatal(err)
		}
		if want := fresh(req); string(got) != want {
			t.Errorf("masked %s\nwant %s", got, want)
		}
		if strings.Contains(string(got), "sk-abc") {
			t.Errorf("the key is left in %s", got)
		}
	}
	if len(m.masked) != 2 || m.masked[system] != system || strings.Contains(m.masked[leak], "sk-abc") {
		t.Errorf("remembered %d strings, want the system prompt unchanged and the leak masked: %q", len(m.masked), m.masked)
	}
}
