package audit

import (
	"encoding/json"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
)

// The gold audit reads every policy-visible message of every recorded
// request: hundreds of megabytes of JSON strings per gate. encoding/json
// validates and decodes through reflection; the functions here decode
// the one layout rollout writes by hand (strings through
// ledger.AppendUnescaped) and give the same result as encoding/json, which
// FuzzAppendUnescaped (ledger) and FuzzParseMessages check.

// appendUnquoted appends the value of the JSON string token tok (quotes
// included) to dst as encoding/json decodes it; ok is false when tok is
// not a valid JSON string.
func appendUnquoted(dst, tok []byte) (_ []byte, ok bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return dst, false
	}
	return appendUnescaped(dst, tok[1:len(tok)-1])
}

// appendUnescaped is appendUnquoted for what lies between the quotes, or
// a prefix of it.
func appendUnescaped(dst, s []byte) (_ []byte, ok bool) {
	dst, n := ledger.AppendUnescaped(dst, s)
	return dst, n == len(s)
}

// parseMessages decodes a JSON array of chat messages as json.Unmarshal
// into []rollout.Message does, appending the contents to content and the
// messages, as spans of content, to msgs. Arrays laid out as encoding/json
// writes []rollout.Message ({"role":…,"content":…} objects, no space) are
// decoded by hand; any other layout by encoding/json.
func parseMessages(b, content []byte, msgs []rawMessage) ([]byte, []rawMessage, error) {
	if c, m, ok := scanMessages(b, content, msgs); ok {
		return c, m, nil
	}
	var decoded []rollout.Message
	if err := json.Unmarshal(b, &decoded); err != nil {
		return content, msgs, err
	}
	for _, m := range decoded {
		start := len(content)
		content = append(content, m.Content...)
		msgs = append(msgs, rawMessage{m.Role, start, len(content)})
	}
	return content, msgs, nil
}

// rawMessage is a message scanMessages decoded: its role, and where its
// content lies in the buffer the contents were decoded into.
type rawMessage struct {
	role       string
	start, end int
}

// scanMessages is parseMessages' hand-written path: a caller reusing
// content and msgs allocates nothing for a message it has seen before,
// and the gold audit decodes every message of every request. ok is false
// when b is not laid out as encoding/json writes []rollout.Message.
func scanMessages(b, content []byte, msgs []rawMessage) (_ []byte, _ []rawMessage, ok bool) {
	const roleKey, contentKey = `{"role":`, `,"content":`
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return content, msgs, false
	}
	s := b[1 : len(b)-1]
	// field appends the value of the string member key that s starts
	// with to content, and moves s past it.
	field := func(key string) bool {
		if len(s) < len(key) || string(s[:len(key)]) != key {
			return false
		}
		s = s[len(key):]
		tok, n := jsonStringToken(s)
		if n == 0 {
			return false
		}
		s = s[n:]
		content, ok = appendUnquoted(content, tok)
		return ok
	}
	first := true
	for len(s) > 0 {
		if !first {
			if s[0] != ',' {
				return content, msgs, false
			}
			s = s[1:]
		}
		first = false
		start := len(content)
		if !field(roleKey) {
			return content, msgs, false
		}
		role := internRole(content[start:])
		content = content[:start]
		if !field(contentKey) || len(s) == 0 || s[0] != '}' {
			return content, msgs, false
		}
		s = s[1:]
		msgs = append(msgs, rawMessage{role, start, len(content)})
	}
	return content, msgs, true
}

// internRole returns role as a string, without allocating for the roles
// chat requests use.
func internRole(role []byte) string {
	switch string(role) {
	case "system":
		return "system"
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	}
	return string(role)
}
