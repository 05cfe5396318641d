package sqlenv

import (
	"strings"
)

// Action is what a turn asks the environment to do.
type Action uint8

// The two actions of the protocol.
const (
	ActionSQL      Action = iota + 1 // <sql>: run the query, answer with an observation
	ActionSolution                   // <solution>: the final answer, ends the episode
)

func (a Action) String() string {
	switch a {
	case ActionSQL:
		return "sql"
	case ActionSolution:
		return "solution"
	}
	return "none"
}

// Turn is a well-formed model reply.
type Turn struct {
	Think  string // the reasoning, white space trimmed
	Action Action
	Body   string // the SQL inside <sql> or <solution>, white space trimmed
	// Unclosed is set when the reply ended where the closing tag would be:
	// the serving engine stopped at the stop string </sql> or </solution>
	// and did not return it.
	Unclosed bool
}

// String renders t in the canonical form ParseTurn reads back to t (with
// Unclosed false).
func (t Turn) String() string {
	tag := t.Action.String()
	return "<think>" + t.Think + "</think>\n<" + tag + ">" + t.Body + "</" + tag + ">"
}

// Problem names what is wrong with a malformed reply.
type Problem string

// The problems ParseTurn reports.
const (
	ProblemMissingThink    Problem = "missing-think"     // the reply does not start with <think>
	ProblemUnclosedThink   Problem = "unclosed-think"    // <think> without </think>
	ProblemNestedTag       Problem = "nested-tag"        // a protocol tag inside a block
	ProblemMissingAction   Problem = "missing-action"    // no <sql> or <solution> after </think>
	ProblemMultipleActions Problem = "multiple-actions"  // a second <sql> or <solution>
	ProblemStrayText       Problem = "stray-text"        // text outside the blocks
	ProblemStrayClosingTag Problem = "stray-closing-tag" // a closing tag that closes nothing
	ProblemEmptyAction     Problem = "empty-action"      // <sql></sql> or <solution></solution>
)

// FormatError reports a reply that breaks the turn protocol. It matches
// ErrMalformedTurn; Hint is the sentence a format-correction prompt can
// quote.
type FormatError struct {
	Problem Problem
	Detail  string
}

func (e *FormatError) Error() string {
	return "malformed turn: " + string(e.Problem) + ": " + e.Detail
}

// Unwrap returns ErrMalformedTurn.
func (e *FormatError) Unwrap() error { return ErrMalformedTurn }

// Hint tells the model how to fix its reply.
func (e *FormatError) Hint() string {
	const form = "Reply with <think>your reasoning</think> followed by exactly one of <sql>a query to run</sql> or <solution>your final SQL</solution>, and nothing else."
	switch e.Problem {
	case ProblemNestedTag:
		return "Do not put <think>, <sql> or <solution> tags inside another block. " + form
	case ProblemMultipleActions:
		return "Use only one <sql> or <solution> block per reply. " + form
	case ProblemEmptyAction:
		return "The <sql> or <solution> block must contain a SQL query. " + form
	}
	return form
}

// tag is one protocol tag found in a reply.
type tag struct {
	name       string // "think", "sql" or "solution"
	closing    bool
	start, end int // byte offsets of '<' and after '>'
}

var tagNames = []string{"think", "sql", "solution"}

// nextTag finds the first protocol tag at or after from, in any letter case.
func nextTag(s string, from int) (tag, bool) {
	for i := from; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		j := i + 1
		closing := j < len(s) && s[j] == '/'
		if closing {
			j++
		}
		for _, name := range tagNames {
			k := j + len(name)
			if k < len(s) && s[k] == '>' && strings.EqualFold(s[j:k], name) {
				return tag{name: name, closing: closing, start: i, end: k + 1}, true
			}
		}
	}
	return tag{}, false
}

func formatErr(p Problem, detail string) error { return &FormatError{Problem: p, Detail: detail} }

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// ParseTurn reads a model reply: <think>…</think>, then <sql>…</sql> or
// <solution>…</solution>, with only white space around and between the
// blocks. Tags match in any letter case (<SQL>). No protocol tag may
// appear inside a block, and a reply has one action. The closing tag of
// the action may be missing only at the very end of the reply, because
// serving engines stop at the stop strings </sql> and </solution> and may
// strip them; such a turn has Unclosed set. Any other deviation is a
// *FormatError.
func ParseTurn(reply string) (Turn, error) {
	var t Turn
	open, ok := nextTag(reply, 0)
	if !ok || open.name != "think" || open.closing || !blank(reply[:open.start]) {
		return t, formatErr(ProblemMissingThink, "the reply must start with <think>")
	}
	end, ok := nextTag(reply, open.end)
	switch {
	case !ok:
		return t, formatErr(ProblemUnclosedThink, "<think> is never closed")
	case end.name != "think" || !end.closing:
		return t, formatErr(ProblemNestedTag, "<think> contains "+reply[end.start:end.end])
	}
	t.Think = strings.TrimSpace(reply[open.end:end.start])

	act, ok := nextTag(reply, end.end)
	switch {
	case !ok || !blank(reply[end.end:act.start]):
		return t, formatErr(ProblemMissingAction, "no <sql> or <solution> block follows </think>")
	case act.closing:
		return t, formatErr(ProblemStrayClosingTag, reply[act.start:act.end]+" closes nothing")
	case act.name == "think":
		return t, formatErr(ProblemMissingAction, "a second <think> where <sql> or <solution> belongs")
	}
	t.Action = ActionSQL
	if act.name == "solution" {
		t.Action = ActionSolution
	}

	closeTag, ok := nextTag(reply, act.end)
	bodyEnd := len(reply)
	switch {
	case !ok:
		t.Unclosed = true
	case closeTag.name != act.name || !closeTag.closing:
		return t, formatErr(ProblemNestedTag, "<"+act.name+"> contains "+reply[closeTag.start:closeTag.end])
	default:
		bodyEnd = closeTag.start
	}
	t.Body = strings.TrimSpace(reply[act.end:bodyEnd])
	if t.Body == "" {
		return t, formatErr(ProblemEmptyAction, "<"+act.name+"> is empty")
	}
	if t.Unclosed {
		return t, nil
	}

	rest := reply[closeTag.end:]
	if extra, ok := nextTag(rest, 0); ok {
		if extra.name != "think" && !extra.closing {
			return t, formatErr(ProblemMultipleActions, "a second action "+rest[extra.start:extra.end])
		}
		return t, formatErr(ProblemStrayText, rest[extra.start:extra.end]+" after the action")
	}
	if !blank(rest) {
		return t, formatErr(ProblemStrayText, "text after </"+act.name+">")
	}
	return t, nil
}
