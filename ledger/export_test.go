package ledger

// ComputeHash is the package's entry hash, for the tests that rewrite a
// chain as an attacker holding this code would: every hash recomputed.
var ComputeHash = computeHash
