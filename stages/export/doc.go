// Package export turns what rlgate holds into what trainers read, and
// records each export as a run of its own so that the split audit can
// prove later which tasks went where.
//
// ExportSFT writes the trajectories rlgate synth kept as an LLaMA-Factory
// dataset: ShareGPT (conversations of system, human, gpt and observation
// messages; CheckShareGPT holds them to LLaMA-Factory's alternation rule)
// or alpaca (instruction, input, output, system, history), with the
// matching entry in dataset_info.json. ExportRL writes the tasks of an
// imported dataset, less the example ids of an exclusion file (the
// example_ids.json of a synthesis), as SkyRL's text2sql parquet, veRL's
// RLHF parquet or JSON lines, the prompts rendered by the rollout
// protocol so that synthesis, RL data and evaluation show a policy the
// same text.
//
// Every export is deterministic (the same input gives the same bytes) and
// is recorded as a run export-<kind>-<digest>: a run.start (Start) with the
// input digests, the exclusion and the blob of sorted task ids the output
// holds, an output artifact per file written, and a run.end with the
// output digests. Exporting the same thing again finds the run and checks
// the digests instead of recording it twice.
package export
