// Package records is the one place that defines every kind of ledger
// entry: the constant that spells each kind, the versions of its body this
// build reads, the Go type of each version (registered by the package that
// owns it, as rekor's kinds register themselves), and the typed values
// bodies carry: run statuses, artifact roles and artifact kinds.
//
// It sits below package ledger, importing nothing of rlgate, so that the
// ledger itself (which reads run.start, run.end, run.resume, artifact,
// metrics and outcomes to fill its derived tables) spells its kinds and
// statuses from here like every other writer. A body type that needs
// ledger's types (a digest, an embedded ledger.RunStart) therefore stays
// in its own package and registers itself from there with Register;
// docs/ARCHITECTURE.md ("Entry kinds") says which type that is.
//
// Writers append a ledger.Record whose Kind is one of these constants;
// readers decode a body with Decode, which checks the kind, the body's
// version (docs/FORMAT.md, "Body versions") and the type, and refuses a
// version this build does not know by name instead of reading it wrong.
package records
