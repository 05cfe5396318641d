// Package runner runs one stage of a training pipeline (synthesis, SFT, RL,
// export, evaluation: any command) through the ledger, without changing it.
//
// Before the command starts, Run hashes the inputs (a checkpoint manifest
// with a model identity for safetensors, a dataset manifest otherwise) and
// configs (raw bytes, plus a canonical JSON form for YAML and JSON), and
// records the git commit and diff, an allow-listed environment, and the
// host with the tool versions found; the environment, argv, params and
// configs go through ledger's one redaction rule (ledger.Redactor), which
// also masks their secrets, and what its value rule finds, in the recorded
// output (docs/FORMAT.md, Secrets). While the command runs (by argv,
// never through a shell it did not ask for), its output is teed to the
// terminal and to the ledger in chunks, declared
// metrics files are tailed into metrics entries and nvidia-smi is sampled,
// every FlushEvery: what was logged before a crash survives it. (A metrics
// file already there when the command starts is read only from where the
// command's own writing starts, or whole if it leaves it alone: see
// priorFile.) Afterwards
// the outputs are hashed and the run is closed as ok, failed (non-zero exit,
// timeout, a declared output missing) or interrupted.
//
// An input whose digest some earlier run recorded as an output is linked to
// that run (produced_by), which is how lineage from SFT to RL is checked.
package runner
