#!/usr/bin/env bash
# Times `go run ./cmd/rlgate demo` as a new user runs it: in a fresh git
# clone of this checkout's HEAD (committed work only), from `go run` (which
# compiles) to the printed verdict. CACHE picks what Go has cached before:
#   cold  empty module and build caches: every module is downloaded from
#         the module proxy (GOPROXY) and everything is compiled, as on a
#         machine with nothing but Go
#   build empty build cache, the module cache as it is (no downloads)
#   warm  both caches as they are (a second run)
# Issue target: under 3 minutes on a 2-core machine.
set -euo pipefail
cache=${CACHE:-cold}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
git clone -q "$src" "$work/rlgate"
case $cache in
cold) export GOMODCACHE="$work/gomodcache" GOCACHE="$work/gocache" ;;
build) export GOCACHE="$work/gocache" ;;
warm) ;;
*) echo "CACHE=$cache: want cold, build or warm" >&2; exit 2 ;;
esac
echo "cache: $cache; $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(go version)"
cd "$work/rlgate"
start=$(date +%s.%N)
go run ./cmd/rlgate demo --dir "$work/demo" > "$work/demo.out"
end=$(date +%s.%N)
grep -E '^gate |^Report:' "$work/demo.out"
sed -n 's/^rlgate demo: \[ *[0-9]*\/[0-9]*\] *\([a-z_0-9]*\) *[a-z-]* *\([0-9.]*s\).*/\1 \2/p' "$work/demo.out" | paste -sd' ' -
echo "go run ./cmd/rlgate demo: $(echo "$end - $start" | bc) s"
