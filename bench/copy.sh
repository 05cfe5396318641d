#!/usr/bin/env bash
# How long `rlgate ledger copy` takes to copy a ledger of 100,000 entries
# and 1 GiB of blobs (1024 x 1 MiB, as bench/verify_interrupt.sh makes)
# into a new directory, then to find nothing to copy, then to copy 10
# more entries (each with a manifest blob); each copy is verified. Issue target: the first copy in
# under 60 s.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rlgate" ./cmd/rlgate
go run ./bench/verifygen -ledger "$work/src" -entries "${ENTRIES:-100000}" -blob-bytes "${BLOB_BYTES:-1073741824}"
sync
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
now() { date +%s.%N; }
timed() { # label, command...
	local t0
	t0=$(now)
	"${@:2}" >/dev/null
	printf '%s: %.2f s\n' "$1" "$(echo "$(now) - $t0" | bc -l)"
}
timed "copy into a new directory" "$work/rlgate" ledger copy --from "$work/src" --to "$work/dst"
"$work/rlgate" --ledger "$work/dst" verify | tail -2
timed "copy again, nothing to copy" "$work/rlgate" ledger copy --from "$work/src" --to "$work/dst"
for i in $(seq 1 10); do "$work/rlgate" --ledger "$work/src" hash --record --name "more$i" bench/copy.sh >/dev/null; done
timed "copy 10 new entries" "$work/rlgate" ledger copy --from "$work/src" --to "$work/dst"
"$work/rlgate" --ledger "$work/dst" verify | tail -2
"$work/rlgate" --ledger "$work/src" head
"$work/rlgate" --ledger "$work/dst" head
