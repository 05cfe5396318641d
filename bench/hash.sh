#!/usr/bin/env bash
# Compares `rlgate hash` with `b3sum --num-threads 2` over the same 2 GiB of
# files, both from the page cache, in one run. Issue target: rlgate reaches
# at least 0.9x b3sum's throughput. Needs b3sum (apt-get install b3sum).
# Usage: bench/hash.sh [DIR] [FILES] [MIB_EACH]   (defaults: a temp dir, 16, 128)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-$(mktemp -d)}
files=${2:-16}
mib=${3:-128}
command -v b3sum >/dev/null || { echo "bench/hash.sh: b3sum not found. Try: apt-get install b3sum" >&2; exit 1; }
go build -o "$dir/rlgate" ./cmd/rlgate
mkdir -p "$dir/data"
for i in $(seq 1 "$files"); do
  f="$dir/data/part-$i.bin"
  [ -s "$f" ] || head -c "${mib}M" /dev/urandom >"$f"
done
bytes=$((files * mib * 1024 * 1024))
cat "$dir"/data/* >/dev/null # page cache
best() { # best wall seconds of 5 runs of "$@"
  local b=999999
  for _ in 1 2 3 4 5; do
    local s e
    s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
    b=$(echo "$e - $s" | bc -l | awk -v b="$b" '{print ($1 < b) ? $1 : b}')
  done
  echo "$b"
}
t_b3=$(best b3sum --num-threads 2 "$dir"/data/*)
t_rl=$(best "$dir/rlgate" hash "$dir/data")
awk -v n="$bytes" -v a="$t_b3" -v b="$t_rl" 'BEGIN {
  printf "data: %.2f GiB in %d files\n", n/2^30, '"$files"'
  printf "b3sum --num-threads 2: %.3f s  %.2f GB/s\n", a, n/a/1e9
  printf "rlgate hash:           %.3f s  %.2f GB/s\n", b, n/b/1e9
  printf "ratio rlgate/b3sum:    %.2fx\n", a/b
}'
[ -n "${1:-}" ] || rm -rf "$dir"
