#!/usr/bin/env bash
# Times `rlgate reproduce --pipeline` in a finished demo directory: every
# one of the demo's 14 stages run again from its recorded inputs in a
# scratch directory and its outputs compared with the recorded ones (the
# entries recorded included). The demo itself is run first and not timed.
# Issue target: under 90 s on the idle 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/bin/rlgate" ./cmd/rlgate
export PATH="$work/bin:$PATH"
rlgate demo --dir "$work/demo" >/dev/null
cd "$work/demo"
echo "$(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
rlgate --ledger .rlgate reproduce --pipeline --json >"$work/reproduce.json"
end=$(date +%s.%N)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(grep -Eo '"reproduced": ?true' "$work/reproduce.json" | wc -l) of $(grep -Eo '"original": ?"' "$work/reproduce.json" | wc -l) stages reproduced"
echo "rlgate reproduce --pipeline: $(echo "$end - $start" | bc) s"
