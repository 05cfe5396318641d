#!/usr/bin/env bash
# ckpt.sh: how fast does rlgate hash and diff checkpoints?
#
# digest: generates a sharded bf16 checkpoint (SIZE_MIB, default 4096) with
# bench/ckptgen, warms the page cache, then runs `rlgate ckpt digest` and
# `b3sum --num-threads 2` over the same files, taking turns, best of RUNS
# (default 3) each. Issue target: rlgate reaches 0.9x b3sum's throughput
# with a peak RSS (from /usr/bin/time -v) under 256 MiB.
# diff: generates two checkpoints of DIFF_MIB (default 1024) from different
# seeds, so they differ in every tensor, and times `rlgate ckpt diff`, best
# of RUNS. Issue target: 1 GB/s, counting the bytes of one checkpoint.
#
# The load average is printed before and after: on a busy machine the
# figures mean little. The generated data is deleted on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MIB=${SIZE_MIB:-4096}
DIFF_MIB=${DIFF_MIB:-1024}
RUNS=${RUNS:-3}
command -v b3sum >/dev/null || { echo "ckpt.sh: b3sum missing; try: apt-get install -y b3sum" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "ckpt.sh: /usr/bin/time missing; try: apt-get install -y time" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rlgate-ckpt.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/ckptgen" ./bench/ckptgen
go build -o "$work/rlgate" ./cmd/rlgate
"$work/ckptgen" -out "$work/ckpt" -mib "$SIZE_MIB"
"$work/ckptgen" -out "$work/diff-a" -mib "$DIFF_MIB" -seed 1
"$work/ckptgen" -out "$work/diff-b" -mib "$DIFF_MIB" -seed 2
bytes=$(cat "$work"/ckpt/* | wc -c) # also warms the page cache
diff_bytes=$(cat "$work"/diff-a/*.safetensors | wc -c)
cat "$work"/diff-b/* >/dev/null

# timed NAME CMD...: runs CMD under /usr/bin/time -v and appends
# "NAME seconds peak-KiB" to $work/times.
timed() {
	local name=$1 t0 t1 kb
	shift
	t0=$(date +%s.%N)
	/usr/bin/time -v "$@" >"$work/out.txt" 2>"$work/time.txt"
	t1=$(date +%s.%N)
	kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
	echo "$name $(echo "$t1 - $t0" | bc -l) $kb" >>"$work/times"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
for _ in $(seq "$RUNS"); do
	timed b3sum b3sum --num-threads 2 "$work"/ckpt/*
	timed digest "$work/rlgate" ckpt digest "$work/ckpt"
done
head -n 1 "$work/out.txt"
for _ in $(seq "$RUNS"); do
	timed diff "$work/rlgate" ckpt diff "$work/diff-a" "$work/diff-b"
done
tail -n 1 "$work/out.txt"
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"

awk -v bytes="$bytes" -v dbytes="$diff_bytes" '
	!($1 in best) || $2 < best[$1] { best[$1] = $2 }
	$3 > rss[$1] { rss[$1] = $3 }
	END {
		printf "digest: %.2f GiB checkpoint, page cache warm, best of runs\n", bytes / 2^30
		printf "  b3sum --num-threads 2: %.3f s  %.2f GB/s  peak RSS %.0f MiB\n", best["b3sum"], bytes / best["b3sum"] / 1e9, rss["b3sum"] / 1024
		printf "  rlgate ckpt digest:    %.3f s  %.2f GB/s  peak RSS %.0f MiB\n", best["digest"], bytes / best["digest"] / 1e9, rss["digest"] / 1024
		printf "  ratio rlgate/b3sum:    %.2f\n", best["b3sum"] / best["digest"]
		printf "diff: two %.2f GiB checkpoints differing in every tensor\n", dbytes / 2^30
		printf "  rlgate ckpt diff:      %.3f s  %.2f GB/s  peak RSS %.0f MiB\n", best["diff"], dbytes / best["diff"] / 1e9, rss["diff"] / 1024
	}' "$work/times"
