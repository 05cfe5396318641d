// Package synth holds cold-start synthesis: sampling a teacher policy many
// times per question, keeping only the trajectories whose final SQL passes
// execution match, and the record shape those trajectories are written in,
// which SFT trainers (rlgate train sft, LLaMA-Factory through rlgate export
// sft) read.
package synth

import "github.com/rlgate/rlgate/stages/sqlenv"

// Trajectory is one kept episode in the seeds' record shape, one JSON line
// of trajectories.jsonl. It is the policy side only: it never carries the
// gold SQL (GoldRecord, in a separate file keyed by example id, does).
type Trajectory struct {
	DBID      string `json:"db_id"`
	ExampleID string `json:"example_id"`
	SampleID  int    `json:"sample_id"`
	// System is the system message the policy was given and BasePrompt
	// the first user message, as the protocol rendered them for the task.
	System     string `json:"system"`
	BasePrompt string `json:"base_prompt"`
	Turns      []Turn `json:"turns"`
}

// Turn is one policy reply of a trajectory with what it contained: its
// reasoning, the SQL it ran and the observation that came back, or its
// final solution (IsFinal).
type Turn struct {
	Turn        int    `json:"turn"`
	Think       string `json:"think"`
	SQL         string `json:"sql"`
	Observation string `json:"observation"`
	Solution    string `json:"solution"`
	IsFinal     bool   `json:"is_final"`
}

// GoldRecord is the gold side of an example, written beside the
// trajectories for those who need it and never read by a policy.
type GoldRecord struct {
	ExampleID string `json:"example_id"`
	DBID      string `json:"db_id"`
	GoldSQL   string `json:"gold_sql"`
}

// FinalSQL is the SQL a trajectory answered with: the solution of its
// final turn, or "" when it has none.
func (t Trajectory) FinalSQL() string {
	for i := len(t.Turns) - 1; i >= 0; i-- {
		if t.Turns[i].IsFinal {
			return t.Turns[i].Solution
		}
	}
	return ""
}

// Reply is the turn as a policy writes it under the protocol, in the
// canonical form sqlenv.ParseTurn reads back: its reasoning in <think>,
// then its <sql>, or its <solution> when final. SFT exports train on it.
func (t Turn) Reply() string {
	st := sqlenv.Turn{Think: t.Think, Action: sqlenv.ActionSQL, Body: t.SQL}
	if t.IsFinal {
		st.Action, st.Body = sqlenv.ActionSolution, t.Solution
	}
	return st.String()
}
