// Package publish writes and checks published checkpoints: a directory
// that holds a training run's checkpoint, the manifest the run recorded,
// optionally a report, and two signatures:
//
//   - model.sig, an OpenSSF Model Signing (OMS) v1.0 bundle: a Sigstore
//     bundle holding a DSSE envelope whose payload is an in-toto Statement
//     v1 with predicate type https://model_signing/signature/v1.0, listing
//     every file with its SHA-256 (the "files" serialization), whose
//     subject digest is the SHA-256 of those digests concatenated in name
//     order, signed with the key method (ECDSA). The OpenSSF reference
//     tool (model_signing verify key) checks it as it checks its own.
//   - rlgate.provenance.json, a DSSE envelope holding a second in-toto
//     Statement v1 whose subject is the OMS root digest and whose
//     predicate (ProvenancePredicate) names the stages, their inputs by
//     digest, the passing gate verdict with its checks and the ledger head.
//
// Publish refuses a checkpoint whose model identity has no passing gate
// verdict (the latest verdict for it decides). A publish request recorded
// with a training run (rlgate run --publish-to) waits in the ledger until
// AfterGate sees a passing verdict for the run's model.
//
// VerifyBundle checks a published directory, or any OMS bundle made with
// the key or certificate method, as model_signing verify does, and the
// provenance when there is one; CheckLedger holds what the provenance
// claims against a ledger.
//
// Why a top-level package of its own, above reports (docs/ARCHITECTURE.md),
// and not part of gpu: it needs the gate's verdicts (audit), and gpu sits
// below stages, which audit imports, so gpu cannot import audit.
//
// DSSE signing and verification (and the PAE) come from
// github.com/secure-systems-lab/go-securesystemslib, statements are built
// and validated with the in-toto attestation Go bindings, and every bundle
// written or read is validated against the OMS JSON Schemas in schemas/.
package publish
