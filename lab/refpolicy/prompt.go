package refpolicy

import (
	"strings"
	"unicode"
)

// Table is one table of a rendered schema: its name and columns in order.
type Table struct {
	Name    string
	Columns []Column
	tokens  []string
}

// Column is one column with what the schema's example values say of it.
type Column struct {
	Name    string
	Text    bool // its example values are quoted strings
	Numeric bool // its example values are all numbers
	tokens  []string
}

// Prompt is what the policy reads from a rendered prompt: the tables of
// the schema (the {db_details} block of rollout's user prompt) and the
// question.
type Prompt struct {
	Tables   []Table
	Question string
	key      string   // the prompt text, which names its situations in a cache
	probe    string   // the value probe (probeSQL)
	words    []string // the question's tokens, lower case and stemmed
	raw      []string // the question's tokens as written
}

// ParsePrompt reads the schema and question out of a user prompt rendered
// by the default protocol (rollout.DefaultProtocol): CREATE TABLE
// statements, each followed by "-- Example values:" lines of the form
// "--   column: value, ...", and the text after the last "Question:" line.
// A prompt in another layout gives a Prompt without tables, to which the
// policy answers with a bare SELECT.
func ParsePrompt(user string) Prompt {
	p := Prompt{key: user}
	if i := strings.LastIndex(user, "Question:\n"); i >= 0 {
		p.Question = strings.TrimSpace(user[i+len("Question:\n"):])
		user = user[:i]
	}
	var cur *Table
	for _, line := range strings.Split(user, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case hasPrefixFold(t, "CREATE TABLE"):
			p.Tables = append(p.Tables, Table{Name: tableName(t[len("CREATE TABLE"):])})
			cur = &p.Tables[len(p.Tables)-1]
		case cur != nil && strings.HasPrefix(line, "--   "):
			name, vals, ok := strings.Cut(line[len("--   "):], ": ")
			if !ok {
				name, vals = strings.TrimSuffix(line[len("--   "):], ":"), ""
			}
			cur.Columns = append(cur.Columns, newColumn(name, vals))
		}
	}
	for i := range p.Tables {
		p.Tables[i].tokens = nameTokens(p.Tables[i].Name)
	}
	p.raw = rawTokens(p.Question)
	for _, w := range p.raw {
		p.words = append(p.words, stem(strings.ToLower(w)))
	}
	p.probe = probeSQL(&p)
	return p
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// tableName reads the (possibly quoted) identifier at the start of s.
func tableName(s string) string {
	s = strings.TrimSpace(s)
	if hasPrefixFold(s, "IF NOT EXISTS") {
		s = strings.TrimSpace(s[len("IF NOT EXISTS"):])
	}
	if s == "" {
		return ""
	}
	if end, ok := map[byte]byte{'"': '"', '`': '`', '[': ']', '\'': '\''}[s[0]]; ok {
		if j := strings.IndexByte(s[1:], end); j >= 0 {
			return s[1 : 1+j]
		}
	}
	j := strings.IndexFunc(s, func(r rune) bool { return r == '(' || unicode.IsSpace(r) })
	if j < 0 {
		return s
	}
	return s[:j]
}

func newColumn(name, vals string) Column {
	c := Column{Name: name, tokens: nameTokens(name)}
	vals = strings.TrimSpace(vals)
	switch {
	case vals == "":
	case strings.HasPrefix(vals, "'"):
		c.Text = true
	default:
		c.Numeric = true
		for _, v := range strings.Split(vals, ", ") {
			if !isNumber(v) {
				c.Numeric, c.Text = false, true
				break
			}
		}
	}
	return c
}

// nameTokens splits a schema name into lower-case stemmed words: on
// underscores, spaces, digits' edges and camel case.
func nameTokens(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, stem(strings.ToLower(string(cur))))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return out
}

// rawTokens splits a question into words and numbers as written; a
// quoted phrase stays one token.
func rawTokens(q string) []string {
	var out []string
	rs := []rune(q)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r == '"' || r == '\'' && (i == 0 || !unicode.IsLetter(rs[i-1])):
			j := i + 1
			for j < len(rs) && rs[j] != r {
				j++
			}
			if j < len(rs) && j > i+1 {
				out = append(out, string(rs[i+1:j]))
				i = j + 1
				continue
			}
			i++
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '.' && j+1 < len(rs) && unicode.IsDigit(rs[j+1]) || rs[j] == '\'' && j+1 < len(rs) && unicode.IsLetter(rs[j+1])) {
				j++
			}
			out = append(out, string(rs[i:j]))
			i = j
		default:
			i++
		}
	}
	return out
}

// stem folds plural endings so "singers" meets column "singer".
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "es") && strings.ContainsAny(w[len(w)-3:len(w)-2], "sxz"):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	dot := false
	for i, r := range s {
		switch {
		case r == '-' && i == 0 && len(s) > 1:
		case r == '.' && !dot:
			dot = true
		case r < '0' || r > '9':
			return false
		}
	}
	return true
}
