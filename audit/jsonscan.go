package audit

import (
	"encoding/json"

	"github.com/rlgate/rlgate/stages/jsonl"
	"github.com/rlgate/rlgate/stages/rollout"
)

// The gold audit reads every policy-visible message of every recorded
// request: hundreds of megabytes of JSON strings per gate. encoding/json
// validates and decodes through reflection; the functions here decode
// the one layout rollout writes by hand (strings through
// jsonl.AppendUnescaped) and give the same result as encoding/json, which
// FuzzAppendUnescaped (stages/jsonl) and FuzzParseMessages check.

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
	dst, n := jsonl.AppendUnescaped(dst, s)
	return dst, n == len(s)
}

// parseMessages decodes a JSON array of chat messages as
// json.Unmarshal into []rollout.Message does. Arrays laid out as
// encoding/json writes []rollout.Message ({"role":…,"content":…} objects,
// no space) are decoded by hand; any other layout by encoding/json.
func parseMessages(b []byte) ([]rollout.Message, error) {
	if msgs, ok := scanMessages(b); ok {
		return msgs, nil
	}
	var msgs []rollout.Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		return nil, err
	}
	return msgs, nil
}

// scanMessages is parseMessages' hand-written path; ok is false when b is
// not laid out as encoding/json writes []rollout.Message.
func scanMessages(b []byte) (msgs []rollout.Message, ok bool) {
	const roleKey, contentKey = `{"role":`, `,"content":`
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	s := b[1 : len(b)-1]
	var buf []byte
	field := func(key string) (string, bool) {
		if len(s) < len(key) || string(s[:len(key)]) != key {
			return "", false
		}
		s = s[len(key):]
		tok, n := jsonStringToken(s)
		if n == 0 {
			return "", false
		}
		s = s[n:]
		var ok bool
		buf, ok = appendUnquoted(buf[:0], tok)
		return string(buf), ok
	}
	msgs = []rollout.Message{}
	for len(s) > 0 {
		if len(msgs) > 0 {
			if s[0] != ',' {
				return nil, false
			}
			s = s[1:]
		}
		role, ok := field(roleKey)
		if !ok {
			return nil, false
		}
		content, ok := field(contentKey)
		if !ok || len(s) == 0 || s[0] != '}' {
			return nil, false
		}
		s = s[1:]
		msgs = append(msgs, rollout.Message{Role: role, Content: content})
	}
	return msgs, true
}
