// Package gold holds the answers of a benchmark, apart from its public
// tasks. Only grading reads it, after the trajectories it grades are
// frozen; the policy side never imports it.
//
// # File
//
// rlgate data import writes gold.jsonl beside tasks.jsonl, one Gold per
// line: the task id it answers, the task's position in the source file
// (which positional predictions files align with), the database the gold
// runs on, the SQL, and its difficulty: BIRD's own, or for Spider-format
// benchmarks the official hardness computed at import (stages/spidersql).
// The two files have
// separate digests in the dataset manifest, so a grading records exactly
// which answers it used.
//
// # Rules
//
// Read refuses unknown fields, a line that is not clean text (package
// jsonl), an entry without id or db_id, and a repeated id. The isolation
// of gold from the policy is structural: package tasks has no field for
// it, package rollout imports tasks and never gold (a test checks the
// imports), and grading reads the gold only once the rollout it grades has
// ended.
package gold
