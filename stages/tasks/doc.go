// Package tasks holds the public side of a benchmark: what a policy may
// see of each task. It cannot hold gold: the Task type has no field for it,
// the reader refuses a file that carries gold fields, and the rollout side
// imports this package and never package gold (a test checks the imports).
//
// # File
//
// rlgate data import writes tasks.jsonl, one Task per line: a stable id
// (<dataset>-<index>), the position in the source file, the dataset and
// database, the question, BIRD's evidence, and the schema rendered from
// the database. Read refuses unknown fields, a line that is not clean text
// (package jsonl), a task without id or db_id, a repeated id, and, with
// ErrGoldField, any member that carries an answer in a source format (sql,
// query, gold, ground_truth, reward_spec, difficulty, ...).
//
// # Task sets
//
// SetDigest names a set of task ids independently of their order; runs,
// gradings and comparisons record it so that two evaluations can be shown
// to cover the same tasks.
package tasks
