package refpolicy

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/sqlenv"
)

// DefaultTurns is the number of replies assumed when a conversation says
// nothing of its turn budget.
const DefaultTurns = 6

var (
	turnsLeftRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`You have (\d+) turns? left`) })
	maxTurnsRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`at most (\d+) turns`) })
)

// Reply answers a conversation of the protocol: the first user message
// is the rendered prompt, each assistant <sql> turn with the user message
// after it (the observation) is history, and the last user message's
// reminder (or the system prompt's "at most N turns") says how many turns
// are left.
func (pol *Model) Reply(msgs []rollout.Message, s Sampler) string {
	p := &Prompt{}
	var hist []Exchange
	turnsLeft := DefaultTurns
	first := true
	for i, m := range msgs {
		switch m.Role {
		case "system":
			if g := maxTurnsRe().FindStringSubmatch(m.Content); g != nil {
				turnsLeft, _ = strconv.Atoi(g[1])
			}
		case "user":
			if first {
				p, first = pol.prompt(m.Content), false
			} else if g := turnsLeftRe().FindStringSubmatch(m.Content); g != nil {
				turnsLeft, _ = strconv.Atoi(g[1])
			}
		case "assistant":
			t, err := sqlenv.ParseTurn(m.Content)
			if err != nil || t.Action != sqlenv.ActionSQL {
				continue
			}
			x := Exchange{SQL: t.Body}
			if i+1 < len(msgs) && msgs[i+1].Role == "user" {
				x.Observation = observationOf(msgs[i+1].Content)
			}
			hist = append(hist, x)
		}
	}
	return pol.Next(p, hist, turnsLeft, s).Turn.String()
}

// observationOf cuts the observation out of an observation message.
func observationOf(msg string) string {
	const open, close = "<observation>", "</observation>"
	i := strings.Index(msg, open)
	j := strings.LastIndex(msg, close)
	if i < 0 || j < i {
		return msg
	}
	return strings.Trim(msg[i+len(open):j], "\n")
}

// Play runs one episode in process, as the rollout client would against
// the served policy: observe executes an <sql> query and returns its
// observation text. It returns the final decision and the tokens of all
// replies (Tokens).
func (pol *Model) Play(p *Prompt, maxTurns int, s Sampler, observe func(sql string) string) (Decision, int) {
	var hist []Exchange
	tokens := 0
	for left := maxTurns; ; left-- {
		d := pol.Next(p, hist, left, s)
		tokens += Tokens(d.Turn.String())
		if d.Turn.Action == sqlenv.ActionSolution {
			return d, tokens
		}
		hist = append(hist, Exchange{SQL: d.Turn.Body, Observation: observe(d.Turn.Body)})
	}
}

// Tokens is the token count the policy reports for a text: a quarter of
// its bytes, rounded up (the policy has no tokenizer).
func Tokens(s string) int { return (len(s) + 3) / 4 }
