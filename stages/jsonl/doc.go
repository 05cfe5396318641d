// Package jsonl reads and writes files of JSON lines, strictly: unknown
// fields are refused and every error names the file and line.
//
// # Reading
//
// Read decodes every non-blank line of a file into a value of the caller's
// type, with unknown fields refused (encoding/json's DisallowUnknownFields),
// so a misspelt or foreign field is an error rather than a silent zero. A
// line may be as long as 64 MiB (a rendered schema of a large database
// runs to megabytes). Before a line is decoded it must be clean text:
// valid UTF-8 without a NUL byte (CheckText, ErrText), because
// encoding/json would replace invalid bytes with U+FFFD and a NUL marks a
// truncated or padded copy. A caller's check function then sees each raw
// line and may refuse it (package tasks refuses gold fields this way).
// Errors read "<path> line <n>: <cause>".
//
// # Writing
//
// Write encodes each value as one line without HTML escaping, so SQL such
// as "a < b" is written as it is.
//
// CheckText is exported for readers of other inputs that want the same
// refusal: whole source files at import (JSON arrays, SQL text), parquet
// strings, and predictions files.
package jsonl
