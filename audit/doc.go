// Package audit holds the checks a reviewer would ask for before believing
// an RL result, the paired comparisons they rest on, and the gate that turns
// them into one verdict.
//
// Compare pairs evaluation runs by task id from the ledger's outcomes and
// reports, against a baseline, the accuracy difference with a paired
// bootstrap interval, McNemar's exact test (Holm-adjusted across the
// comparisons) and the minimum detectable effect, so "no gain" can be told
// from "no evidence".
//
// AuditWeights checks that training changed the weights (Base vs trained,
// element rule |a-b| > atol + rtol|a|), that the No-update control (lr = 0)
// equals Base in every tensor digest, and that the model an evaluation
// served has the identity training produced. It reads checkpoints from
// disk.
//
// The ledger audits read only the ledger, and files it names after checking
// them against the digests it recorded. They take Subjects: grading runs
// and training stage runs under labels (base, sft, rl, noupdate). Gold
// checks that no gold SQL reached a policy-visible message and, with
// Options.Mutate, that re-playing sampled tasks beside a mutated gold sends
// byte-identical requests; Split that training data and evaluation tasks
// share no id, question or (optionally) database; Budget that compared
// evaluations share dataset (the databases and SQLite version their
// gradings recorded included), task set, protocol and grading, graded the
// same episodes (none counted wrong unplayed), and kept to their budgets,
// naming each unfinished episode of a rollout that did not end ok; Reward
// that the databases exist with their recorded digests and gold graded
// against itself scores 1, and that the trained run's reward is alive and
// its KL bounded; Training that each run ended ok (its exit code cited
// when not), recorded no problem with its metrics files, and took
// optimizer steps with the right learning rate; Identity that each evaluation served the model its label
// names and the No-update control left the weights alone. Each returns a
// Report with every finding and the ledger seqs behind it, recorded as an
// audit.NAME entry.
//
// Gate runs a Policy's audits and tests its claims (A > B: bootstrap
// interval above 0, exact McNemar p below alpha after Holm across the
// claims), and records a gate.verdict bound to the rl model identity and
// the ledger head it was decided on.
//
// Audits return every finding; an error means an audit could not run.
package audit
