package ledger

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Redacted stands in an entry for a value the redaction rule removed.
const Redacted = "[redacted]"

// MinMasked is the shortest secret masked in recorded output. A shorter one
// ("1", "yes") would turn every occurrence of common text into Redacted and
// hide nothing worth hiding; it is still redacted where it is recorded as a
// value (environment, parameters, arguments, endpoints).
const MinMasked = 4

// secretWordEnds are the endings that make a word of a name secret (see
// SecretName). "tokens" is not one of them: max_tokens is a setting.
var secretWordEnds = []string{
	"key", "token", "secret", "secrets", "pass", "password", "passwd", "passphrase",
	"auth", "authorization", "credential", "credentials", "access", "sig", "signature",
}

// secretWords are the words that make a name secret only as a whole word
// of a name of several words: MYSQL_PWD and GH_PAT are secret, while PWD
// alone is the shell's working directory and path and patience are other
// words.
var secretWords = []string{"pwd", "pat"}

// SecretName reports whether name (an environment variable, a parameter, a
// command-line flag, a URL query parameter) marks its value secret. This is
// the one redaction rule's test of names: the name is split into words at
// every character that is not a letter or digit and where a lower-case
// letter or digit meets an upper-case one; the value is secret when a word,
// lower-cased, ends with one of key, token, secret(s), pass, password,
// passwd, passphrase, auth, authorization, credential(s), access, sig or
// signature, or, in a name of several words, is pwd or pat. So HF_TOKEN,
// MY_DB_PASSWORD, DB_PASS, S3_ACCESS, APIKEY, apiKey, --access-token,
// X-Amz-Signature, MYSQL_PWD and GH_PAT are secret; max_tokens,
// TOKENIZERS_PARALLELISM, XAUTHORITY, PWD, PATH and patience are not.
func SecretName(name string) bool {
	var words []string
	var word []rune
	end := func() {
		if len(word) > 0 {
			words = append(words, strings.ToLower(string(word)))
		}
		word = word[:0]
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			end()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			end()
			word = append(word, r)
		default:
			word = append(word, r)
		}
		prev = r
	}
	end()
	for _, w := range words {
		for _, s := range secretWordEnds {
			if strings.HasSuffix(w, s) {
				return true
			}
		}
		if len(words) > 1 && slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

// Redactor applies the redaction rule to the values that go into one entry
// (or one run's entries), remembering which fields it changed, so that the
// entry can say so, and which secrets it removed, so that recorded output
// can be masked with Masker. The zero value is ready to use.
//
// The rule, in full: a value whose name is secret (SecretName) is replaced
// by Redacted whole; in any other value, every secret the value rule finds
// (see maskText: well-known token shapes, bearer tokens, NAME=VALUE with a
// secret NAME, URL user information and secret query parameters, webhook
// URLs) is replaced by Redacted where it stands. Command lines follow the
// same rule per argument (see Argv).
type Redactor struct {
	fields  []string
	secrets map[string]bool
}

// Value returns value as it may be recorded. name is the value's name (an
// environment variable, a parameter), or "" for a value without one (an
// endpoint). field names the value in the entry ("env.HF_TOKEN",
// "params.api_key", "endpoint") and is noted when the value changes; with
// field "" nothing is noted, but the secrets found still join those Masker
// masks (a variable that is not recorded but can still be printed).
func (r *Redactor) Value(field, name, value string) string {
	if SecretName(name) && value != "" {
		r.note(field, value)
		return Redacted
	}
	out, removed := maskText(value)
	if len(removed) > 0 {
		r.note(field, removed...)
	}
	return out
}

// Argv returns a command line as it may be recorded, field naming it
// ("argv"; a changed argument is noted as "argv[i]"). Per argument: in
// --NAME=VALUE, -NAME=VALUE and NAME=VALUE the value follows Value's rule
// for NAME; an argument --NAME or -NAME with a secret NAME makes the next
// argument secret unless that one starts with "--"; URLs in any other
// argument are redacted as in Value. An argument holding white space (a
// script for sh -c) gets the same rule word by word.
func (r *Redactor) Argv(field string, argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	secretNext := false
	for i, a := range argv {
		f := field + "[" + strconv.Itoa(i) + "]"
		if !secretNext && strings.ContainsAny(a, " \t\n") {
			out[i] = r.script(f, a)
			secretNext = false
			continue
		}
		out[i], secretNext = r.arg(f, a, secretNext)
	}
	return out
}

// arg redacts one argument; secretNext says the previous one was a secret
// flag. It returns whether the next argument is secret.
func (r *Redactor) arg(field, a string, secretNext bool) (string, bool) {
	switch {
	case secretNext && !strings.HasPrefix(a, "--") && a != "":
		r.note(field, a)
		return Redacted, false
	case strings.HasPrefix(a, "-"):
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			return a, SecretName(strings.TrimLeft(a, "-"))
		}
		return name + "=" + r.Value(field, strings.TrimLeft(name, "-"), value), false
	}
	if name, value, ok := strings.Cut(a, "="); ok && isVarName(name) {
		return name + "=" + r.Value(field, name, value), false
	}
	return r.Value(field, "", a), false
}

// script applies the argument rule to the words of a shell script and
// replaces, in the script as written, every secret found.
func (r *Redactor) script(field, s string) string {
	var words Redactor
	secretNext := false
	for _, w := range strings.Fields(s) {
		_, secretNext = words.arg(field, w, secretNext)
	}
	if _, found := maskText(s); len(found) > 0 { // a secret spanning words: -H "Authorization: Bearer X"
		words.note("", found...)
	}
	if len(words.secrets) == 0 {
		return s
	}
	secrets := sortedSecrets(words.secrets)
	r.note(field, secrets...)
	return replacer(secrets).Replace(s)
}

// isVarName reports whether s can be the NAME of a NAME=VALUE argument.
func isVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func (r *Redactor) note(field string, secrets ...string) {
	if field != "" && !slices.Contains(r.fields, field) {
		r.fields = append(r.fields, field)
	}
	if r.secrets == nil {
		r.secrets = map[string]bool{}
	}
	for _, s := range secrets {
		r.secrets[s] = true
	}
}

// Absorb adds the secrets o removed to those r's Masker masks, without
// o's fields: values recorded in another entry (a config file) whose
// secrets a stage may still print.
func (r *Redactor) Absorb(o *Redactor) {
	for s := range o.secrets {
		r.note("", s)
	}
}

// Fields returns the fields whose values were changed, sorted: what an
// entry's "redacted" list holds.
func (r *Redactor) Fields() []string {
	if len(r.fields) == 0 {
		return nil
	}
	out := slices.Clone(r.fields)
	slices.Sort(out)
	return out
}

// Redact returns value as it may be recorded, for a caller that records a
// single value and needs no Redactor (an endpoint).
func Redact(name, value string) string {
	var r Redactor
	return r.Value("", name, value)
}

// redactURLs replaces the user information and secret query parameters of
// every URL in s and returns the secrets removed (the password, or the
// whole user information when it has none; the query values as written and
// decoded).
func redactURLs(s string) (string, []string) {
	if !strings.Contains(s, "://") {
		return s, nil
	}
	var b strings.Builder
	var removed []string
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexFunc(rest, func(c rune) bool { return unicode.IsSpace(c) || strings.ContainsRune(`"'<>`, c) })
		if end < 0 {
			end = len(rest)
		}
		u := rest[:end]
		rest = rest[end:]
		host, tail := u, ""
		if j := strings.IndexAny(u, "/?#"); j >= 0 {
			host, tail = u[:j], u[j:]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			info := host[:at]
			if _, pw, ok := strings.Cut(info, ":"); ok && pw != "" {
				if pw != Redacted {
					removed = append(removed, pw)
				}
				if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
					removed = append(removed, dec)
				}
			} else if info != "" && info != Redacted {
				removed = append(removed, info)
			}
			host = Redacted + host[at:]
		}
		b.WriteString(host)
		q := strings.IndexByte(tail, '?')
		if q < 0 {
			b.WriteString(tail)
			continue
		}
		b.WriteString(tail[:q+1])
		query, frag, _ := strings.Cut(tail[q+1:], "#")
		for k, p := range strings.Split(query, "&") {
			if k > 0 {
				b.WriteByte('&')
			}
			name, value, ok := strings.Cut(p, "=")
			dname, _ := url.QueryUnescape(name)
			if !ok || value == "" || value == Redacted || !SecretName(dname) {
				b.WriteString(p)
				continue
			}
			removed = append(removed, value)
			if dec, err := url.QueryUnescape(value); err == nil && dec != value {
				removed = append(removed, dec)
			}
			b.WriteString(name + "=" + Redacted)
		}
		if strings.Contains(tail[q+1:], "#") {
			b.WriteString("#" + frag)
		}
	}
	b.WriteString(rest)
	return b.String(), removed
}

// The value rule: what marks a secret in text by its shape or by the name
// written before it, wherever the text came from (an argument, a variable
// holding a header, a stage's output, a server's reply). Each expression's
// last group is the secret. They are kept narrow, so that SQL, questions,
// model names, digests, paths and numbers pass unchanged: a token must
// start at a word boundary with its vendor's prefix and be as long as its
// vendor makes them; a NAME=VALUE needs a secret NAME and an unquoted VALUE
// right after the "=" (SQL's "password = 'x'" is left alone).
const (
	// tokenShape: OpenAI and Anthropic keys (sk-), GitHub tokens (ghp_,
	// gho_, ghu_, ghs_, ghr_, github_pat_), Hugging Face tokens (hf_),
	// Slack tokens (xoxb-, xoxp-, ...), AWS access key ids (AKIA, ASIA) and
	// JSON Web Tokens.
	tokenShape = `(?:^|[^A-Za-z0-9_])(` +
		`sk-[A-Za-z0-9_-]{16,}` +
		`|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}` +
		`|hf_[A-Za-z0-9]{20,}` +
		`|xox[abposr]-[A-Za-z0-9-]{10,}` +
		`|(?:AKIA|ASIA)[0-9A-Z]{16}` +
		`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`
	// bearer: the credentials of an HTTP Authorization header, with or
	// without the header's name.
	bearer        = `(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})`
	authorization = `(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:basic|bearer|token|digest|apikey)\s+)?([^\s"',;\\]{4,})`
	// webhook: the secret path of a chat webhook URL.
	webhook = `(?:hooks\.slack\.com/(?:services|workflows|triggers)/|discord(?:app)?\.com/api/webhooks/|webhook\.office\.com/webhookb2/)([A-Za-z0-9/_@.-]+)`
	// assignment: NAME=VALUE (a shell variable, a flag, a query
	// parameter), NAME secret.
	assignment = "(?:^|[^A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_-]*)=([^\\s\"'&\\\\<>`]+)"
	// jsonMember: "NAME": "VALUE" in JSON text, NAME secret.
	jsonMember = `"([A-Za-z0-9_.-]+)"\s*:\s*"((?:[^"\\]|\\.)+)"`
	// header: Header-Name: VALUE of an HTTP header echoed in text (a name
	// of several words joined by "-"), the name secret: X-Api-Key.
	header = `\b([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)\s*:\s*([^\s"',;\\]+)`
)

// valueRules are the expressions above with what text must hold for
// each to match (lower-cased), which spares the regular expressions most
// text: a stage's output and every recorded body pass through them.
// named: the expression's first group is a name, which must be secret
// (SecretName), and its second the value.
// They are compiled when first used, not at every rlgate start.
var valueRules = sync.OnceValue(func() []valueRule {
	return []valueRule{
		{regexp.MustCompile(tokenShape), false, wordStarting("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "xox", "AKIA", "ASIA", "eyJ")},
		{regexp.MustCompile(bearer), false, containsAny("bearer")},
		{regexp.MustCompile(authorization), false, containsAny("authorization")},
		{regexp.MustCompile(webhook), false, containsAny("hooks.slack.com", "discord", "webhook.office.com")},
		{regexp.MustCompile(assignment), true, secretNameBefore("=")},
		{regexp.MustCompile(jsonMember), true, secretNameBefore(":")},
		{regexp.MustCompile(header), true, secretNameBefore(":")},
	}
})

type valueRule struct {
	re    *regexp.Regexp
	named bool
	may   func(s, lower string) bool
}

// wordStarting: one of prefixes, in its case, starts a word of s (at its
// start, or after a byte other than a letter, digit or underscore): the
// only places tokenShape, which is case-sensitive, can match. Text that
// merely holds "Asia" or "task-" is not searched.
func wordStarting(prefixes ...string) func(s, lower string) bool {
	return func(s, _ string) bool {
		for _, p := range prefixes {
			for at := 0; ; {
				i := strings.Index(s[at:], p)
				if i < 0 {
					break
				}
				if i += at; i == 0 || !isWordByte(s[i-1]) {
					return true
				}
				at = i + 1
			}
		}
		return false
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func containsAny(subs ...string) func(string, string) bool {
	f := containsAnyOf(subs...)
	return func(_, lower string) bool { return f(lower) }
}

func containsAnyOf(subs ...string) func(string) bool {
	return func(s string) bool {
		for _, sub := range subs {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
}

// secretNameBefore: a separator of seps in s follows a secret name
// (SecretName), with white space and a closing quote allowed between: the
// only places a named rule can match. The name taken is the longest run of
// name characters, whose words include those of every name the rules can
// match there.
func secretNameBefore(seps string) func(s, lower string) bool {
	word := containsAnyOf(append(slices.Clone(secretWordEnds), secretWords...)...)
	return func(s, lower string) bool {
		if !word(lower) {
			return false
		}
		for i := strings.IndexAny(s, seps); i >= 0; {
			j := i
			for j > 0 && strings.IndexByte(" \t\n\f\r", s[j-1]) >= 0 {
				j--
			}
			if j > 0 && s[j-1] == '"' {
				j--
			}
			k := j
			for k > 0 && isNameByte(s[k-1]) {
				k--
			}
			if k < j && SecretName(s[k:j]) {
				return true
			}
			n := strings.IndexAny(s[i+1:], seps)
			if n < 0 {
				break
			}
			i += 1 + n
		}
		return false
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// maskText returns s with every secret the value rule finds replaced by
// Redacted, and the secrets found. It works line by line: no secret the
// rule knows spans lines, and most lines of output need no expression.
func maskText(s string) (string, []string) {
	if !strings.Contains(s, "\n") {
		return maskLine(s)
	}
	var b strings.Builder
	var found []string
	for line := range strings.SplitAfterSeq(s, "\n") {
		out, f := maskLine(line)
		b.WriteString(out)
		found = append(found, f...)
	}
	return b.String(), found
}

// maskLine is maskText for one line.
func maskLine(s string) (string, []string) {
	s, found := redactURLs(s)
	var spans [][2]int
	add := func(lo, hi int) {
		if hi > lo && !strings.HasPrefix(s[lo:hi], Redacted) { // masked already
			spans = append(spans, [2]int{lo, hi})
		}
	}
	lower := strings.ToLower(s)
	for _, r := range valueRules() {
		if !r.may(s, lower) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(s, -1) {
			if !r.named {
				add(m[len(m)-2], m[len(m)-1])
			} else if SecretName(s[m[2]:m[3]]) {
				add(m[4], m[5])
			}
		}
	}
	if len(spans) > 0 {
		slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
		var b strings.Builder
		at := 0
		for _, sp := range spans {
			if sp[1] <= at {
				continue // inside a span already masked
			}
			if sp[0] >= at {
				b.WriteString(s[at:sp[0]])
				b.WriteString(Redacted)
			} // else it overlaps the span masked last, which grows
			found = append(found, s[sp[0]:sp[1]])
			at = sp[1]
		}
		b.WriteString(s[at:])
		s = b.String()
	}
	return s, found
}

// sortedSecrets lists secrets longest first, so that a secret containing
// another is replaced whole.
func sortedSecrets(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return out
}

func replacer(secrets []string) *strings.Replacer {
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// Masker masks, in a stream of output, every secret the Redactor removed
// that is at least MinMasked bytes long, and every secret the value rule
// finds (maskText). A secret split across writes is still masked: Mask
// holds back a tail that could begin a known secret, and the end of a line
// not yet ended (at most maxLine bytes), until the next write or Flush.
// All masks a whole buffer and may be called from several goroutines.
type Masker struct {
	secrets [][]byte // longest first; none when the Redactor removed none
	rep     *strings.Replacer
	held    []byte // may begin a known secret
	line    []byte // known secrets masked; the value rule waits for the line's end

	// masked are strings JSON masked before, each to what it gave: a
	// chat request repeats every message of the turns before it, so a
	// rollout met each message as many times as its episode had turns
	// after it, and masking was a sixth of a rollout's CPU. maskedBytes
	// counts their length, bounded by maxMasked.
	mu          sync.Mutex
	masked      map[string]string
	maskedBytes int
}

// maxMasked bounds the bytes of the strings a Masker remembers; past it,
// it forgets them all and starts again.
const maxMasked = 64 << 20

// minMasked is the shortest string a Masker remembers: a shorter one is
// masked about as fast as it is looked up.
const minMasked = 256

// maxLine bounds the end of a line a Masker holds back: output that never
// ends a line (a progress bar) still reaches the ledger. A token cut there
// is not seen by the value rule.
const maxLine = 64 << 10

// Masker returns a masker for the secrets removed so far and the value
// rule.
func (r *Redactor) Masker() *Masker {
	var long []string
	for _, s := range sortedSecrets(r.secrets) {
		if len(s) >= MinMasked {
			long = append(long, s)
		}
	}
	m := &Masker{rep: replacer(long)}
	for _, s := range long {
		m.secrets = append(m.secrets, []byte(s))
	}
	return m
}

// Mask takes the next bytes of the stream and returns what can be released,
// masked, and how many secrets were masked in it.
func (m *Masker) Mask(p []byte) ([]byte, int) {
	m.held = append(m.held, p...)
	cut := m.boundary(m.held)
	out, n := m.replace(m.held[:cut])
	m.held = append(m.held[:0], m.held[cut:]...)
	m.line = append(m.line, out...)
	end := bytes.LastIndexAny(m.line, "\n\r") + 1
	if end == 0 && len(m.line) > maxLine {
		end = len(m.line)
	}
	out, k := maskBytes(m.line[:end])
	m.line = append(m.line[:0], m.line[end:]...)
	return out, n + k
}

// Flush releases what Mask held back: the stream has ended.
func (m *Masker) Flush() ([]byte, int) {
	out, n := m.replace(m.held)
	m.held = m.held[:0]
	out, k := maskBytes(append(m.line, out...))
	m.line = m.line[:0]
	return out, n + k
}

// All returns b masked whole: a body recorded at once.
func (m *Masker) All(b []byte) []byte {
	out, _ := m.replace(b)
	out, _ = maskBytes(out)
	return out
}

// JSON returns the JSON text b with every string in it masked (member
// names are kept): a secret inside an escaped string, such as a reply
// body recorded as a string, is seen unescaped. It returns b itself when
// nothing was masked, and re-encoded JSON (members in name order)
// otherwise.
func (m *Masker) JSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	changed := false
	v = m.walk(v, &changed)
	if !changed {
		return b, nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		out.Truncate(out.Len() - 1)
	}
	return out.Bytes(), nil
}

func (m *Masker) walk(v any, changed *bool) any {
	switch x := v.(type) {
	case string:
		if s := m.remembered(x); s != x {
			*changed = true
			return s
		}
	case map[string]any:
		for k, e := range x {
			x[k] = m.walk(e, changed)
		}
	case []any:
		for i, e := range x {
			x[i] = m.walk(e, changed)
		}
	}
	return v
}

// remembered is String(s), from what the masker remembers when it masked
// s before: the result depends on s and the masker's secrets alone.
func (m *Masker) remembered(s string) string {
	if len(s) < minMasked {
		return m.String(s)
	}
	m.mu.Lock()
	out, ok := m.masked[s]
	m.mu.Unlock()
	if ok {
		return out
	}
	out = m.String(s)
	m.mu.Lock()
	if m.masked == nil || m.maskedBytes+len(s) > maxMasked {
		m.masked, m.maskedBytes = map[string]string{}, 0
	}
	m.masked[s] = out
	m.maskedBytes += len(s)
	m.mu.Unlock()
	return out
}

// Known masks in b only the secrets the Redactor removed, not what the
// value rule would guess: for bytes that must stay usable (a diff to
// apply), which a guess could break.
func (m *Masker) Known(b []byte) []byte {
	out, _ := m.replace(b)
	return out
}

// String is All for a string.
func (m *Masker) String(s string) string { return string(m.All([]byte(s))) }

// maskBytes applies the value rule to b, returning how many secrets it
// masked.
func maskBytes(b []byte) ([]byte, int) {
	out, found := maskText(string(b))
	if len(found) == 0 {
		return slices.Clone(b), 0
	}
	return []byte(out), len(found)
}

// boundary returns how much of b can be released: everything before the
// longest tail that could begin a secret, and before any secret that
// crosses that point.
func (m *Masker) boundary(b []byte) int {
	cut := len(b) - m.partial(b)
	for moved := true; moved; {
		moved = false
		for _, s := range m.secrets {
			lo := max(0, cut-len(s)+1)
			if i := bytes.Index(b[lo:min(len(b), cut+len(s)-1)], s); i >= 0 && lo+i < cut {
				cut, moved = lo+i, true
			}
		}
	}
	return cut
}

func (m *Masker) replace(b []byte) ([]byte, int) {
	n := 0
	for _, s := range m.secrets {
		n += bytes.Count(b, s)
	}
	if n == 0 {
		return slices.Clone(b), 0
	}
	// Counted per secret, a secret inside a longer one counts twice; the
	// count only says that masking happened.
	return []byte(m.rep.Replace(string(b))), n
}

// partial returns the length of the longest tail of b that is a proper
// prefix of some secret, or the start of a secret's occurrence that reaches
// the end of b.
func (m *Masker) partial(b []byte) int {
	if len(m.secrets) == 0 {
		return 0
	}
	longest := len(m.secrets[0])
	for k := min(len(b), longest-1); k > 0; k-- {
		tail := b[len(b)-k:]
		for _, s := range m.secrets {
			if len(s) > k && bytes.HasPrefix(s, tail) {
				return k
			}
		}
	}
	return 0
}
