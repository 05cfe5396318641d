// Package demo is the equipment rlgate demo runs (workflow/demo lays it
// out and runs it): the embedded Spider dev benchmark, split by database
// into SFT, RL and evaluation parts and unpacked into the demo directory
// as Spider-format sources (Split, Unpack); and the pipeline file and gate
// policy that take it through import, synthesis, SFT, two RL stages, the
// No-update control, four evaluations and the gate with nothing but the
// rlgate binary, in the correct form or with one deliberate defect the
// gate must reject (Write, Inject).
package demo
