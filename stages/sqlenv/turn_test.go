package sqlenv

import (
	"errors"
	"testing"
)

func TestParseTurn(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		want    Turn
		problem Problem // "" when the reply is well formed
	}{
		{
			name:  "sql",
			reply: "<think>count them</think>\n<sql>SELECT count(*) FROM Dogs</sql>",
			want:  Turn{Think: "count them", Action: ActionSQL, Body: "SELECT count(*) FROM Dogs"},
		},
		{
			name:  "solution with surrounding space",
			reply: "\n  <think>\n done \n</think>\n\n<solution>\n SELECT 1 \n</solution>\n",
			want:  Turn{Think: "done", Action: ActionSolution, Body: "SELECT 1"},
		},
		{
			name:  "tags in any case",
			reply: "<THINK>x</Think><SQL>SELECT 1</sQl>",
			want:  Turn{Think: "x", Action: ActionSQL, Body: "SELECT 1"},
		},
		{
			name:  "empty think",
			reply: "<think></think><sql>SELECT 1</sql>",
			want:  Turn{Action: ActionSQL, Body: "SELECT 1"},
		},
		{
			name:  "stop string stripped from sql",
			reply: "<think>x</think><sql>SELECT name\nFROM Dogs",
			want:  Turn{Think: "x", Action: ActionSQL, Body: "SELECT name\nFROM Dogs", Unclosed: true},
		},
		{
			name:  "stop string stripped from solution",
			reply: "<think>x</think> <solution>SELECT 1 ",
			want:  Turn{Think: "x", Action: ActionSolution, Body: "SELECT 1", Unclosed: true},
		},
		{
			name:  "angle brackets that are not tags",
			reply: "<think>a < b and <b> is html</think><sql>SELECT 1 WHERE 2 > 1 AND '<x>' <> ''</sql>",
			want:  Turn{Think: "a < b and <b> is html", Action: ActionSQL, Body: "SELECT 1 WHERE 2 > 1 AND '<x>' <> ''"},
		},
		{name: "no think", reply: "<sql>SELECT 1</sql>", problem: ProblemMissingThink},
		{name: "text before think", reply: "Sure! <think>x</think><sql>SELECT 1</sql>", problem: ProblemMissingThink},
		{name: "nothing", reply: "", problem: ProblemMissingThink},
		{name: "closing think first", reply: "</think><sql>SELECT 1</sql>", problem: ProblemMissingThink},
		{name: "unclosed think", reply: "<think>hmm", problem: ProblemUnclosedThink},
		{name: "sql inside think", reply: "<think>try <sql>SELECT 1</sql></think><sql>SELECT 1</sql>", problem: ProblemNestedTag},
		{name: "sql inside sql", reply: "<think>x</think><sql>SELECT <sql>1</sql></sql>", problem: ProblemNestedTag},
		{name: "solution inside sql", reply: "<think>x</think><sql>SELECT 1<solution>", problem: ProblemNestedTag},
		{name: "wrong closing tag", reply: "<think>x</think><sql>SELECT 1</solution>", problem: ProblemNestedTag},
		{name: "no action", reply: "<think>x</think>", problem: ProblemMissingAction},
		{name: "bare SQL after think", reply: "<think>x</think>SELECT 1", problem: ProblemMissingAction},
		{name: "text between blocks", reply: "<think>x</think> so: <sql>SELECT 1</sql>", problem: ProblemMissingAction},
		{name: "second think", reply: "<think>x</think><think>y</think><sql>SELECT 1</sql>", problem: ProblemMissingAction},
		{name: "stray closing tag", reply: "<think>x</think></sql>", problem: ProblemStrayClosingTag},
		{name: "sql and solution", reply: "<think>x</think><sql>SELECT 1</sql><solution>SELECT 1</solution>", problem: ProblemMultipleActions},
		{name: "two sql blocks", reply: "<think>x</think><sql>SELECT 1</sql>\n<sql>SELECT 2</sql>", problem: ProblemMultipleActions},
		{name: "think after the action", reply: "<think>x</think><sql>SELECT 1</sql><think>y</think>", problem: ProblemStrayText},
		{name: "text after the action", reply: "<think>x</think><sql>SELECT 1</sql> Done.", problem: ProblemStrayText},
		{name: "empty sql", reply: "<think>x</think><sql> </sql>", problem: ProblemEmptyAction},
		{name: "empty unclosed solution", reply: "<think>x</think><solution>", problem: ProblemEmptyAction},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTurn(tt.reply)
			if tt.problem != "" {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.Problem != tt.problem || !errors.Is(err, ErrMalformedTurn) {
					t.Fatalf("err = %v, want problem %s", err, tt.problem)
				}
				if fe.Hint() == "" {
					t.Error("empty hint")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// FuzzParseTurn checks that ParseTurn never panics and that a turn it
// accepts renders (String) to a reply that parses back to the same turn.
func FuzzParseTurn(f *testing.F) {
	for _, s := range []string{
		"<think>x</think><sql>SELECT 1</sql>",
		"<think>x</think><solution>SELECT 1",
		"<THINK> a </THINK>\n<SOLUTION>b</SOLUTION>\n",
		"<think><sql></sql></think>",
		"<think>x</think><sql>a</sql><sql>b</sql>",
		"</think><",
		"<think>\xff</think><sql>\x00</sql>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		turn, err := ParseTurn(reply)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			return
		}
		if turn.Body == "" || (turn.Action != ActionSQL && turn.Action != ActionSolution) {
			t.Fatalf("accepted %q as %+v", reply, turn)
		}
		again, err := ParseTurn(turn.String())
		turn.Unclosed = false
		if err != nil || again != turn {
			t.Fatalf("%q: parsed %+v, rendered %q, reparsed %+v, %v", reply, turn, turn.String(), again, err)
		}
	})
}
