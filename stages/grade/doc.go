// Package grade is the gold side of evaluation: it runs predicted and gold
// SQL through the read-only executor of stages/sqlenv, after a trajectory
// is frozen, and decides execution match (EX) and the RL reward terms.
//
// # Metrics
//
// Three execution-match rules and BIRD's Soft-F1 are selectable, and the
// one used is recorded (Metric; docs/METRICS.md):
//
//   - bird reproduces BIRD's evaluation_ex.py: set(pred_rows) ==
//     set(gold_rows) under Python equality (1 == 1.0, None == None,
//     strings exact, column order inside a row matters), prediction and
//     gold within one 30 s budget on the gold's database; an error,
//     timeout, or text that is not UTF-8 (Python's sqlite3 cannot decode
//     it) scores 0 and stays in the denominator.
//   - spider reproduces the Spider test-suite's exec_eval.eval_exec_match
//     with its defaults: both queries are postprocessed ("> =" → ">=") and
//     stripped of every DISTINCT token as sqlparse lexes them, keeping
//     only the first statement; rows are compared as lists only when the
//     gold contains the substring "order by" (single space), otherwise as
//     bags; the prediction's columns may be permuted; text bytes that are
//     not UTF-8 are dropped. The original's pre-check that compares rows
//     sorted by str(value)+str(type(value)) is kept, since it rejects some
//     equal results (a row holding 1 and "1.5" sorts differently from one
//     holding 1.0 and "1.5"), and the verdicts depend on it.
//   - strict is ours: same column count, bags of rows (lists when the
//     gold's outermost query has an ORDER BY clause, found by tokens, not
//     one in a subquery), numbers equal when their
//     exact decimal values are (an integer, or a float's shortest repr
//     read as a rational), text and blobs by bytes, NULL equal to NULL.
//   - bird-softf1 reproduces BIRD's evaluation_f1.py: each item's score
//     is its Soft-F1 (BirdSoftF1), with the official quirks (row i of the
//     prediction paired with row i of the gold, so row order changes the
//     score); its correct is the bird verdict of the same rows.
//   - spider-em reproduces the Spider evaluator's exact set match
//     (evaluation.py --etype match, default flags) with the parser of
//     stages/spidersql; nothing is executed, and a prediction the official
//     parser rejects is a pred-error counted in Summary.Unparsed.
//
// Python's sqlite3 runs an empty statement as a query with no rows, and
// under bird and spider so do we; under strict it is an error.
//
// # Grading
//
// Compare is pure: it takes two Denotations (rows or error) and returns an
// Outcome with a Verdict: correct, wrong, pred-error, or gold-defect, and
// whether the verdict is fragile: resting on a float's last digits.
// Grader.Grade adds the verdicts that SQLite before 3.43, which adds SUM,
// AVG and TOTAL left to right where later versions compensate, would
// flip: it grades such queries again with sqlenv's naive sums. A
// gold that fails is a gold defect, scored 0 under every metric and
// reported; the official Spider code would stop with an assertion.
//
// A Grader executes queries with caps (a result over a million rows or
// 32 MiB counts as failed, ErrResultTooLarge; a string or blob over
// 8 MiB, or SQLite's heap past sqlenv.HeapHardLimit, fails the query)
// and time limits (bird: 30 s for the pair, the prediction getting what
// the gold left; spider and strict: 60 s per query; Options.BirdBudget
// and Options.Timeout change them). Like an error or a timeout, a cap or a
// memory limit makes a prediction incorrect, and it stays in the
// denominator. Gold denotations go through a GoldCache keyed
// by the database's BLAKE3 digest and the SQL as executed, so one gold
// runs once for any number of predictions; a timed-out gold is not kept.
// Grade is safe for concurrent use.
//
// # Rewards
//
// Grader.Reward returns every component in [0, 1] and their weighted sum
// with the Weights used: execution match; SoftF1, the F1 of predicted
// against gold rows as bags; BirdSoftF1, the official Soft-F1; format, whether the final turn parsed;
// parses, whether the prediction compiles against the database; schema
// Jaccard, over the table and column names each query mentions (a plain
// tokenizer matched against the database's names, no alias resolution);
// and BigramOverlap, the Dice overlap of token bigrams.
//
// # Predictions files
//
// ReadPredictions reads bird-json (BIRD's {"0": "SQL\t----- bird
// -----\tdb_id"}, paired by position in the file, with the official
// reader's fallbacks reported as Warnings), spider-txt (one query per
// line; a blank line is an error, where the official reader would drop it
// and misalign every later line) and jsonl ({"index": i, "sql": "…"}).
// A file that is not clean UTF-8, or holds a NUL byte, is refused first.
//
// # Databases
//
// CheckDatabases hashes every database an import recorded (on all cores,
// once per command: a Grader remembers the digests) and refuses a missing
// one or one whose digest differs from the import's, unless the caller
// allows the mismatch, which is then listed. Gradings record the check
// (digests, mismatches, SQLite version) in their run.start entry.
//
// GradeFile grades a predictions file offline against an imported dataset,
// pairing predictions with tasks by source position. GradeTrajectories
// grades a rollout run that ended ok: the gold is read only after its
// run.end; each task's samples are reduced under a mode and recorded as
// one outcome per task in a grading run of its own.
//
// # Modes
//
// ModeGreedy stands on sample 0. ModeMajority executes every sample's
// final SQL, groups the samples by result set (ResultKey: the set of rows
// under Python equality) and keeps the largest group, a tie going to the
// group whose first member came earliest; a failed query does not vote.
// ModePassK counts a task correct when any sample is and records the
// unbiased pass@k, 1 - C(n-c,k)/C(n,k) (stats.PassAtK). CheckMode refuses a mode that cannot
// reduce the rollout's n samples, before anything is played.
package grade
