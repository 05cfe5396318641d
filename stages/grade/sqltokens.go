package grade

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind classifies a lexeme.
type tokKind uint8

const (
	tokSpace   tokKind = iota // white space, newlines included
	tokComment                // -- …, # …, /* … */
	tokWord                   // keyword or bare identifier: \w[$#\w]*
	tokName                   // quoted identifier: "…", `…`, […], or @x, #x, $x, :x, ?x, \x
	tokString                 // '…'
	tokNumber
	tokPunct // ( ) , ; . [ ] :
	tokOp    // anything else: operators, stray characters
)

// token is one lexeme; the concatenation of a query's tokens is the query.
type token struct {
	kind tokKind
	text string
}

// lexSQL splits q into tokens the way sqlparse (which the Spider
// evaluator uses to strip DISTINCT) does, as far as it matters here: words
// are \w[$#\w]*, strings may escape quotes by doubling or with a backslash,
// "# " starts a comment, and quoted identifiers, strings and comments are
// single tokens. It never fails; a stray character is a one-character
// tokOp.
func lexSQL(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		kind, n := lexOne(q, i)
		toks = append(toks, token{kind, q[i : i+n]})
		i += n
	}
	return toks
}

// lexOne returns the kind and byte length of the token at q[i:].
func lexOne(q string, i int) (tokKind, int) {
	s := q[i:]
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case strings.HasPrefix(s, "--") || strings.HasPrefix(s, "# "):
		if j := strings.IndexAny(s, "\r\n"); j >= 0 {
			if strings.HasPrefix(s[j:], "\r\n") {
				return tokComment, j + 2
			}
			return tokComment, j + 1
		}
		return tokComment, len(s)
	case strings.HasPrefix(s, "/*"):
		if j := strings.Index(s[2:], "*/"); j >= 0 {
			return tokComment, j + 4
		}
		return tokOp, 1 // sqlparse leaves an unterminated comment unlexed
	case unicode.IsSpace(r):
		n := size
		for n < len(s) {
			r2, sz := utf8.DecodeRuneInString(s[n:])
			if !unicode.IsSpace(r2) {
				break
			}
			n += sz
		}
		return tokSpace, n
	case strings.HasPrefix(s, "::") || strings.HasPrefix(s, ":="):
		return tokPunct, 2
	case r == '`':
		if n := quoted(s, '`', false); n > 0 {
			return tokName, n
		}
	case r == '\'':
		if n := quoted(s, '\'', true); n > 0 {
			return tokString, n
		}
	case r == '"':
		if n := quoted(s, '"', true); n > 0 {
			return tokName, n
		}
	case r == '[':
		if j := strings.IndexAny(s[1:], "[]"); j > 0 && s[1+j] == ']' && !afterWordOrClose(q, i) {
			return tokName, j + 2
		}
	case strings.ContainsRune("@#$:?\\", r) && size < len(s):
		// @name, #name, $name, :name, ?name, \command are one name.
		if n := wordLen(s[size:]); n > 0 {
			return tokName, size + n
		}
	case unicode.IsDigit(r):
		n := size
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n < len(s) && s[n] == '.' {
			n++
			for n < len(s) && s[n] >= '0' && s[n] <= '9' {
				n++
			}
		}
		if wordLen(s[n:]) == 0 {
			return tokNumber, n
		}
		return tokWord, wordLen(s)
	case isWordRune(r):
		return tokWord, wordLen(s)
	case strings.ContainsRune("();,.[]:", r):
		return tokPunct, 1
	case strings.ContainsRune(comparisonChars, r):
		return tokOp, runLen(s, comparisonChars)
	case strings.ContainsRune(operatorChars, r):
		return tokOp, runLen(s, operatorChars)
	}
	return tokOp, size
}

// Runs of these characters are one operator token, as in sqlparse.
const (
	comparisonChars = "<>=~!"
	operatorChars   = "+/@#%^&|-"
)

// runLen returns the length of the run of ASCII characters from set at
// the start of s.
func runLen(s, set string) int {
	n := 0
	for n < len(s) && strings.IndexByte(set, s[n]) >= 0 {
		n++
	}
	return n
}

// quoted returns the length of the quoted token at the start of s, or 0
// when it is not terminated. A doubled quote escapes it, and so does a
// backslash where backslash is set (sqlparse's string rule).
func quoted(s string, quote byte, backslash bool) int {
	for i := 1; i < len(s); i++ {
		switch {
		case backslash && s[i] == '\\' && i+1 < len(s):
			i++
		case s[i] == quote:
			if i+1 < len(s) && s[i+1] == quote {
				i++
				continue
			}
			return i + 1
		}
	}
	return 0
}

// afterWordOrClose reports whether q[i] follows a word character, ']' or
// ')', where '[' is a subscript, not a quoted identifier.
func afterWordOrClose(q string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(q[:i])
	return isWordRune(r) || r == ']' || r == ')'
}

// isWordRune is Python's \w: letters, digits, underscore.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// wordLen returns the length of the word \w[$#\w]* at the start of s.
func wordLen(s string) int {
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if !(isWordRune(r) || (n > 0 && (r == '$' || r == '#'))) {
			break
		}
		n += size
	}
	return n
}

// firstStatement returns the tokens of the first statement, as sqlparse's
// splitter cuts it: at a ';' outside parentheses (END closes a level, as
// in sqlparse), keeping the white space and line comments that follow.
func firstStatement(toks []token) []token {
	level := 0
	for i, t := range toks {
		switch {
		case t.kind == tokPunct && t.text == "(":
			level++
		case t.kind == tokPunct && t.text == ")":
			level--
		case t.kind == tokWord && strings.EqualFold(t.text, "end"):
			level--
		case t.kind == tokPunct && t.text == ";" && level <= 0:
			j := i + 1
			for j < len(toks) && (toks[j].kind == tokSpace || (toks[j].kind == tokComment && !strings.HasPrefix(toks[j].text, "/*"))) {
				j++
			}
			return toks[:j]
		}
	}
	return toks
}

// joinTokens concatenates token texts.
func joinTokens(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

// words returns the lower-cased tokens of q that carry meaning: no white
// space or comments; quoted identifiers lose their quotes.
func words(q string) []string {
	var out []string
	for _, t := range lexSQL(q) {
		switch t.kind {
		case tokSpace, tokComment:
			continue
		case tokName:
			if n := len(t.text); n >= 2 && strings.ContainsRune("\"`[", rune(t.text[0])) {
				out = append(out, strings.ToLower(t.text[1:n-1]))
				continue
			}
		}
		out = append(out, strings.ToLower(t.text))
	}
	return out
}

// hasOrderBy reports whether q ends in an ORDER BY clause of its own,
// outside parentheses (so not one of a subquery or CTE), strings and
// comments.
func hasOrderBy(q string) bool {
	depth := 0
	prevOrder := false
	for _, t := range lexSQL(q) {
		switch {
		case t.kind == tokSpace || t.kind == tokComment:
			continue
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case depth == 0 && prevOrder && t.kind == tokWord && strings.EqualFold(t.text, "by"):
			return true
		}
		prevOrder = depth == 0 && t.kind == tokWord && strings.EqualFold(t.text, "order")
	}
	return false
}
