package ledger

import (
	"bytes"
	"net/url"
	"slices"
	"strconv"
	"strings"
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

// SecretName reports whether name (an environment variable, a parameter, a
// command-line flag, a URL query parameter) marks its value secret. This is
// the one redaction rule's test of names: the name is split into words at
// every character that is not a letter or digit and where a lower-case
// letter or digit meets an upper-case one; the value is secret when a word,
// lower-cased, ends with one of key, token, secret(s), pass, password,
// passwd, passphrase, auth, authorization, credential(s), access, sig or
// signature. So HF_TOKEN, MY_DB_PASSWORD, DB_PASS, S3_ACCESS, APIKEY,
// apiKey, --access-token and X-Amz-Signature are secret; max_tokens,
// TOKENIZERS_PARALLELISM and XAUTHORITY are not.
func SecretName(name string) bool {
	var word []rune
	end := func() bool {
		w := strings.ToLower(string(word))
		word = word[:0]
		for _, s := range secretWordEnds {
			if strings.HasSuffix(w, s) {
				return true
			}
		}
		return false
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			if end() {
				return true
			}
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			if end() {
				return true
			}
			word = append(word, r)
		default:
			word = append(word, r)
		}
		prev = r
	}
	return end()
}

// Redactor applies the redaction rule to the values that go into one entry
// (or one run's entries), remembering which fields it changed, so that the
// entry can say so, and which secrets it removed, so that recorded output
// can be masked with Masker. The zero value is ready to use.
//
// The rule, in full: a value whose name is secret (SecretName) is replaced
// by Redacted whole; in any other value, the user information of a URL
// (scheme://USER:PASSWORD@host) is replaced by Redacted, and so is the value
// of every query parameter whose name is secret (api_key, key, token,
// access_token, sig, signature, password, secret, X-Amz-Credential, ...).
// Command lines follow the same rule per argument (see Argv).
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
	out, removed := redactURLs(value)
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
				removed = append(removed, pw)
				if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
					removed = append(removed, dec)
				}
			} else if info != "" {
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
			if !ok || value == "" || !SecretName(dname) {
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
// that is at least MinMasked bytes long. A secret split across writes is
// still masked: Mask holds back a tail that could begin one until the next
// write or Flush.
type Masker struct {
	secrets [][]byte // longest first
	rep     *strings.Replacer
	held    []byte
}

// Masker returns a masker for the secrets removed so far; nil when there is
// none to mask.
func (r *Redactor) Masker() *Masker {
	var long []string
	for _, s := range sortedSecrets(r.secrets) {
		if len(s) >= MinMasked {
			long = append(long, s)
		}
	}
	if len(long) == 0 {
		return nil
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
	return out, n
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

// Flush releases what Mask held back: the stream has ended.
func (m *Masker) Flush() ([]byte, int) {
	out, n := m.replace(m.held)
	m.held = m.held[:0]
	return out, n
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
