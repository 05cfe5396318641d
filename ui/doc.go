// Package ui serves a ledger read-only to a browser (rlgate ui): its runs,
// each run's inputs, outputs, log, metrics and entries, any entry by seq
// or hash, the gate verdicts with their evidence and the lineage of an
// experiment. Pages are built on the server from html/template and
// embedded assets, so they read without JavaScript and fetch nothing from
// the network. Every number links to the entry it comes from.
//
// It is read-only by construction: the caller opens the ledger with
// ledger.OpenReadOnly, the server answers only GET and HEAD, and no page
// writes. A server on a non-loopback address requires a token
// (CheckAddr), and every request to a server with one must carry it. What
// exists and how to use it: docs/UI.md.
package ui
