// Package manifests describes files, directory trees and checkpoints by
// digest, so a run can record exactly what it read and wrote.
//
// A dataset manifest (HashTree) lists every file with its BLAKE3 digest and
// size, and every symlink with its target, under a Merkle digest of the
// tree: a directory's digest covers its children's names, types, sizes and
// digests, so a subdirectory's digest equals its node in the parent's
// manifest, and a single file's digest is exactly what b3sum prints.
// Symlinks are recorded, never followed, so a tree cannot pull in bytes
// from outside itself. Files are hashed in parallel, in 256 KiB reads that
// stay in the L2 cache (faster here than hashing from a memory map).
//
// Every function that reads files to hash or diff them takes a context and
// runs on an errgroup limited to GOMAXPROCS goroutines: the first error
// cancels the other workers, and canceling the context (Ctrl-C in the CLI)
// stops them all between two reads, returning the context's error.
//
// Checkpoint manifests add, for safetensors files, each tensor's name,
// dtype, shape and digest, and a model identity that does not depend on how
// the tensors are sharded into files.
//
// The exact byte layouts that feed every digest here are in docs/FORMAT.md;
// code that writes them is marked "NB: the bytes hashed here".
package manifests
