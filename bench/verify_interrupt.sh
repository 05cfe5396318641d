#!/usr/bin/env bash
# How fast Ctrl-C stops `rlgate verify` on a ledger of 100,000 entries and
# 1 GiB of blobs. Times one whole verify, then sends SIGINT at points
# spread over it (so every phase gets hit: integrity check, chain walk,
# blob hashing, derived comparison) and reports, for each, the exit code
# and the time from the signal to the process's exit. Issue target: under
# 1 s, exit 130.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rlgate" ./cmd/rlgate
go run ./bench/verifygen -ledger "$work/ledger" -entries "${ENTRIES:-100000}" -blob-bytes "${BLOB_BYTES:-1073741824}"
sync
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
now() { date +%s.%N; }
"$work/rlgate" --ledger "$work/ledger" verify | tail -2 # warms the page cache
whole=
for _ in 1 2 3; do # the shortest of three, so the signals land inside a run
	t0=$(now)
	"$work/rlgate" --ledger "$work/ledger" verify >/dev/null
	t=$(echo "$(now) - $t0" | bc -l)
	if [ -z "$whole" ] || (($(echo "$t < $whole" | bc -l))); then whole=$t; fi
done
printf 'whole verify (warm cache, shortest of 3): %.2f s\n' "$whole"
worst=0
for frac in 0.02 0.1 0.2 0.35 0.5 0.65 0.8 0.9; do
	"$work/rlgate" --ledger "$work/ledger" verify >/dev/null 2>"$work/err" &
	pid=$!
	sleep "$(echo "$whole * $frac" | bc -l)"
	ts=$(now)
	kill -INT "$pid" || echo "verify ended before the signal"
	set +e
	wait "$pid"
	code=$?
	set -e
	te=$(now)
	lat=$(echo "$te - $ts" | bc -l)
	printf 'SIGINT at %.0f%% (%.2f s): exit %d, stopped after %.3f s: %s\n' "$(echo "$frac * 100" | bc -l)" "$(echo "$whole * $frac" | bc -l)" "$code" "$lat" "$(tr -d '\n' <"$work/err")"
	if (($(echo "$lat > $worst" | bc -l))); then worst=$lat; fi
done
printf 'worst time from SIGINT to exit: %.3f s\n' "$worst"
