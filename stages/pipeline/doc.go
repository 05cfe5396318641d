// Package pipeline reads rlgate.yaml pipeline files and reproduces them
// through the ledger.
//
// A pipeline names stages, each with a cmd (a list is an argv, a string is
// run by sh -c), deps and outs (a mapping name: path, or, as dvc.yaml
// writes them, a list of paths, each named by its cleaned path with forward
// slashes), params, configs, metrics files and an optional timeout and gpu
// setting. A stage depends on the stages whose outs hold its deps; Load
// orders the stages and refuses unknown keys, a value of the wrong shape
// (naming the file and line, the stage, the key and what it expects), a
// path listed twice, one name for a dep and an out, cycles and an output
// with two producers.
//
// Repro walks the stages in order and runs a stage only when it must: when
// it never succeeded, or its command, params, configs or input digests
// differ from its last successful run, or an output no longer has the digest
// that run recorded. Every decision comes with its reasons. Lineage is by
// digest, so re-running an upstream stage that writes the same bytes does
// not force the downstream ones to run. A stage may declare a gate policy:
// once it ran or was up to date, the gate is checked, and a failed gate
// fails the stage, so nothing downstream of it runs.
package pipeline
