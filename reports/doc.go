// Package reports turns what the ledger holds about an experiment into a
// report a reviewer can re-derive: Markdown, one self-contained HTML page
// with inline SVG charts, and a JSON evidence bundle.
//
// Build reads, from the ledger alone, the runs of the latest gate verdict
// (or those named), and states the model table (Base / SFT / RL /
// No-update: accuracy with Wilson intervals, the paired difference to the
// baseline with its bootstrap interval, b/c, exact McNemar p, Holm p and
// the minimum detectable effect; over all tasks, per difficulty and per
// database, through audit.CompareOutcomes), the verdict's claims and audit
// checks, each evaluation's budget, the training curves (reward, KL,
// learning rate, response length, through audit.CanonSeries), the lineage
// of every stage by digest and the ledger head, each number with the
// entries behind it. Nothing is computed here that audit or stats
// computes.
//
// Unless a passing gate verdict covers the runs, the first line of every
// format names the unsupported claims and no gain is stated: differences
// are headed "measured difference ... (unsupported)", never Δ or a gain.
//
// Write writes the files (report.json always); Check re-builds the report
// from the ledger as of the head report.json records and lists every
// difference, file and line, with the report's and the ledger's values.
package reports
