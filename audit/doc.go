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
// served has the identity training produced.
//
// Audits return every finding; an error means an audit could not run.
package audit
