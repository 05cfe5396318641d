#!/usr/bin/env bash
# ckpt.sh: how fast does rlgate digest a checkpoint, next to b3sum?
#
# Generates a sharded bf16 checkpoint (SIZE_MIB, default 4096) with
# bench/ckptgen, warms the page cache, then hashes the same files with
# bench/ckptdigest (manifests.BuildCheckpointManifest, GOMAXPROCS workers)
# and with `b3sum --num-threads 2`, best of RUNS (default 3) each. Prints
# both throughputs, their ratio, and ckptdigest's peak RSS from
# /usr/bin/time -v. The generated data is deleted on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MIB=${SIZE_MIB:-4096}
RUNS=${RUNS:-3}
command -v b3sum >/dev/null || { echo "ckpt.sh: b3sum missing; try: apt-get install -y b3sum" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "ckpt.sh: /usr/bin/time missing; try: apt-get install -y time" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rlgate-ckpt.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/ckptgen" ./bench/ckptgen
go build -o "$work/ckptdigest" ./bench/ckptdigest
"$work/ckptgen" -out "$work/ckpt" -mib "$SIZE_MIB"
bytes=$(cat "$work"/ckpt/* | wc -c) # also warms the page cache

now() { date +%s.%N; }
# faster T BEST: is T less than BEST (or BEST unset)?
faster() { [ -z "$2" ] || [ "$(echo "$1 < $2" | bc -l)" = 1 ]; }

best_b3=""
for _ in $(seq "$RUNS"); do
	t0=$(now)
	b3sum --num-threads 2 "$work"/ckpt/* >/dev/null
	t=$(echo "$(now) - $t0" | bc -l)
	if faster "$t" "$best_b3"; then best_b3=$t; fi
done

best_rl=""
peak_kb=0
for _ in $(seq "$RUNS"); do
	t0=$(now)
	/usr/bin/time -v "$work/ckptdigest" "$work/ckpt" >"$work/out.txt" 2>"$work/time.txt"
	t=$(echo "$(now) - $t0" | bc -l)
	kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
	[ "$kb" -gt "$peak_kb" ] && peak_kb=$kb
	if faster "$t" "$best_rl"; then best_rl=$t; fi
done
cat "$work/out.txt"

awk -v bytes="$bytes" -v b3="$best_b3" -v rl="$best_rl" -v kb="$peak_kb" -v cpus="$(nproc)" 'BEGIN {
	printf "checkpoint: %.2f GiB on %d CPUs, page cache warm, best of runs\n", bytes / 2^30, cpus
	printf "b3sum --num-threads 2: %.3f s  %.2f GB/s\n", b3, bytes / b3 / 1e9
	printf "rlgate ckptdigest:     %.3f s  %.2f GB/s\n", rl, bytes / rl / 1e9
	printf "ratio rlgate/b3sum:    %.2f\n", b3 / rl
	printf "ckptdigest peak RSS:   %.1f MiB\n", kb / 1024
}'
