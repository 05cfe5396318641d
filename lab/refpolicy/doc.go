// Package refpolicy is the reference policy: a small CPU Text-to-SQL
// policy that speaks the rollout protocol (stages/rollout) over an
// OpenAI-compatible endpoint, so that rlgate's whole pipeline (synthesis,
// SFT, GRPO, evaluation, audits, gate) runs on a laptop with real
// checkpoints, trajectories and statistics. docs/REFPOLICY.md is its
// manual.
//
// # Model
//
// A SQLNet-style sketch with seven slots (Slot): table; selected
// (aggregation, column) or count(*); a second column; one condition
// (column, operator, value: a value the probe found, or a number of the
// question with =, > or <); GROUP BY column; ORDER BY column or count(*)
// with direction; LIMIT 1 or a number of the question. Each slot is a
// softmax over its candidates, scored by a log-linear model over hashed
// lexical features (Dim buckets, FNV-1a): the question's unigrams and
// bigrams crossed with each candidate's kind, exact and partial matches of
// table and column names, question words crossed with column words, the
// words around a mention. The weights are one f32 tensor per slot,
// slot.<name>.w, saved as safetensors (Save, Load) through the project's
// writer, so checkpoint manifests and identities work on them unchanged.
//
// # Turns
//
// The policy reads the rendered prompt (ParsePrompt: the CREATE TABLE
// statements and example-value lines of the schema, and the question). It
// first runs a value probe (ProbeSQL) with <sql> when the question holds
// words that may be stored values; then checks up to MaxChecks candidate
// queries with <sql>, moving to the next candidate after an empty result
// or an error; it answers the first whose result has rows, or the best
// one. Next decides one turn from the history; Reply does so for a chat
// request; Play runs an episode in process (the trainer's loop). At
// temperature 0 the candidates are the best choice and its best one-slot
// variants; above 0 they are drawn from the slots' softmax with a PCG
// generator seeded by the request's seed and user field, so the same
// request always gets the same reply.
//
// # Serving
//
// Handler serves GET /v1/models and POST /v1/chat/completions with usage
// (token counts are a quarter of the bytes). The package is policy side:
// it never imports gold or the grader (a test checks the dependency
// graph); the trainer lives in refpolicy/train.
//
// # Training calculus
//
// LogProb, MarginalLogProb (SFT targets), KL and Entropy give values and
// add gradients over the slots an answer shows; Match finds the choices
// that render a given SQL (SFT's targets); Base is the starting
// checkpoint.
package refpolicy
