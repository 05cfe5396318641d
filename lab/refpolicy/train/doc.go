// Package train trains the reference policy (lab/refpolicy) on the CPU:
// SFT on rejection-sampled trajectories and GRPO with DAPO's dynamic
// sampling and asymmetric clipping, rewarded by execution match from the
// project's grader (stages/grade). Episodes are played in process by the
// same code that serves the policy (refpolicy.Model.Play), against an Env
// that executes queries read-only, renders observations as the rollout
// protocol does and remembers every query it ran, so identical SQL is
// executed once. Both trainers write veRL file-logger JSONL metrics and
// are deterministic under their seed: episodes run concurrently but each
// has its own seeded generator, and gradients are summed in a fixed order.
package train
