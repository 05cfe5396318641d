#!/usr/bin/env bash
# Times `rlgate compare` end to end (process start, ledger open, pairing,
# bootstrap B=10,000 per comparison, McNemar, MDE, recording) over four runs
# of 1,534 tasks. Issue target: under 1 s.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rlgate" ./cmd/rlgate
go run ./bench/comparegen -ledger "$work/ledger"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 1 --runs 10 "$work/rlgate --ledger $work/ledger compare --runs base=base,sft=sft,rl=rl,noupdate=noupdate"
