// Package metrics reads the step metrics that RL trainers log and turns them
// into a stream of points (step, key, value), keeping the trainer's own key
// names.
//
// # Formats
//
// A format is named after a colon in the CLI (--metrics log.jsonl:verl) and
// parsed by ParseFormat or ParseSpec; without one, or with "auto", Detect
// decides from the file name or its first 64 KiB, and refuses a file that
// reads as two formats (ErrAmbiguousFormat) or none (ErrUnknownFormat),
// naming the lines behind its verdict.
//
//   - verl: veRL's file logger, JSONL lines {"step": N, "data": {...}}.
//     Numeric leaves of data become points; nested objects are flattened
//     with "/" ({"a": {"b": 1}} gives a/b); strings, bools, nulls and arrays
//     are skipped and counted. Python's NaN, Infinity and -Infinity literals
//     are accepted, since json.dumps writes them.
//
//   - verl-console: veRL's console logger, "step:N - key:value - ...". Ray's
//     "(TaskRunner pid=N)" prefix, its "[repeated Nx across cluster]"
//     suffix and ANSI colours are removed; values may be written as
//     np.float64(0.1), np.int64(5), tensor(0.1, ...), nan or inf; a
//     carriage return starts a new line, as on a terminal. A record
//     continues on the next line when a line ends with " -" or the next
//     starts with "- ". The line must start with "step:" once those
//     decorations are gone; any other line is ignored and counted.
//
//   - trl: TRL's trainer_state.json. Every log_history entry is a record at
//     its "step"; every other numeric member is a point, summary entries
//     (train_runtime, ...) included.
//
//   - tensorboard: TFRecord-framed Event protobufs. Scalars are
//     Summary.Value simple_value or a tensor holding exactly one float,
//     double, int32 or int64; images, histograms and text are skipped and
//     counted.
//
//   - jsonl: one object per line with a step member (Options.StepKey,
//     default "step"); every other numeric member, flattened as for verl,
//     is a point.
//
//   - llamafactory: LLaMA-Factory's trainer_log.jsonl, read as jsonl with
//     the step under current_steps (loss, lr, epoch, percentage, ...;
//     elapsed_time and remaining_time are strings and skipped).
//
//   - skyrl-console: SkyRL's console logger, a loguru line ending
//     "Step N: " and then the step's metrics as pprint.pformat wrote them,
//     over as many lines as it took; the record is complete when the
//     dict's braces balance. SkyRL writes every float as a string with
//     four decimals: the values are what the console shows, no more
//     precise, and a learning rate shown as '0.0000' (1e-6 is) is not
//     recorded at all but counted as skipped, since it would claim lr = 0;
//     SkyRL's TensorBoard files keep full precision.
//
//   - openrlhf-console: OpenRLHF's PPO trainer line "Global step N: {...}",
//     the metrics a Python dict repr on that line.
//
//   - wandb, swanlab, mlflow: an experiment tracker's own files (a W&B
//     run-*.wandb or pre-0.10 wandb-history.jsonl, a SwanLab 0.6
//     backup.swanlab or 0.3-0.5 logs/ with its runs.swanlab, an MLflow
//     file-store run directory), each given as the
//     file or the run directory. W&B and SwanLab frame records as LevelDB's
//     log does (llog.go): W&B's are protobuf, decoded by field number
//     (wandb.go), SwanLab's JSON (swanlab.go). Besides points, these fill a
//     TrackerRun (Tailer.Run): identity, times, end state, config, summary,
//     console output, and findings such as a truncated tail, which keeps
//     every record before it. MLflow's directory is read once, at Final.
//
// Both console formats of Python dicts take values as Python printed them
// (numbers, np.float64(…), tensor(…), nan, inf, and strings holding a
// number); nested dicts are flattened with "/"; None, bools, lists and
// other strings are skipped and counted, as are a console line's
// decorations as for verl-console.
//
// # Duplicates
//
// One rule for a key written twice in one record: the last write wins, and
// the repeat is counted in Stats.Duplicates, which the runner records as a
// warning. A record is one JSON line or TRL entry, one TensorBoard event, or
// one console step record, which takes in a line redrawn after a carriage
// return and a step line that repeats the open record's step; Python's json
// module and Go's encoding/json also keep the last of repeated members. (In
// the veRL documentation's example log, testdata/trainer-logs/
// verl-console-doc-excerpt.log, step 1, the second actor/reward_kl_penalty
// stands where actor/reward_kl_penalty_coeff belongs; the rule keeps it and
// the warning says a value was overwritten.) The same (step, key) in two
// records apart in the file (a trainer resumed from a checkpoint logs some
// steps again) is returned as is: points come in file order and the
// consumer decides.
//
// # Reading a growing file
//
// A stage's trainer appends to its log while rlgate ingests it. A Tailer
// returns only complete records: a last line without a newline, a console
// record whose continuation may still come, a truncated TensorBoard record,
// a trainer_state.json caught mid-rewrite are held back and reported in
// Stats.PendingBytes. Its Cursor says where to resume; store the cursor in
// the same transaction as the points it follows and a restarted process
// continues with NewTailer(path, opts, cursor), neither losing nor repeating
// a point. Call Final once the trainer has exited. ParseFile reads a
// finished file in one call.
//
// A truncated last TensorBoard record is never an error (a killed trainer
// leaves one); a checksum mismatch before it is, reported as a *ParseError
// with the file and byte offset and wrapping ErrBadCRC. Text formats report
// file, line and, for JSON syntax, column.
//
// # Canonical keys
//
// Audits need a few quantities whatever the trainer: mean reward, KL,
// learning rate, gradient norm, zero-variance group counts, optimizer step.
// Canonical maps a trainer's key to such a Canon and Keys gives the keys
// behind one, preferred first; the tables are in canonical.go, one per
// trainer in Trainers (veRL, SkyRL, TRL, LLaMA-Factory, OpenRLHF, and the
// Hugging Face Trainer as its W&B and SwanLab callbacks log it, every key
// under "train/": train/loss is TRL's loss, train/learning_rate its
// learning_rate; LLaMA-Factory's lr and a W&B run's lr are the learning
// rate too).
package metrics
