#!/usr/bin/env bash
# Times `rlgate grade` end to end (process start to printed result, ledger
# writes included) on the 1034 Spider DAIL-SQL predictions, for one file
# and for four files against one gold set (which must cost less than 3x
# one: gold results are computed once). Issue target: one file in at most a
# tenth of the official test-suite evaluator's time (about 1.8 s on this
# machine class). Uses hyperfine when installed (apt-get install hyperfine).
# With OFFICIAL=DIR (a checkout of taoyds/test-suite-sql-eval, run with a
# python3 that has sqlparse and tqdm: apt-get install python3-sqlparse
# python3-tqdm) the official evaluator is timed in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/rlgate" ./cmd/rlgate
rl="$work/rlgate --ledger $work/ledger"
$rl init >/dev/null
sp=testdata/spider
$rl data import spider --dev $sp/dev.json --gold $sp/dev_gold.sql --db-root $sp/database --out "$work/spider" >/dev/null
pred=$sp/predictions/dail-sql-gpt4.txt
for i in 1 2 3 4; do cp $pred "$work/p$i.txt"; done
one="$rl grade --format spider-txt --tasks $work/spider --metric spider --predictions $work/p1.txt"
four="$rl grade --format spider-txt --tasks $work/spider --metric spider --predictions $work/p1.txt --predictions $work/p2.txt --predictions $work/p3.txt --predictions $work/p4.txt"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
official=()
if [ -n "${OFFICIAL:-}" ]; then
  official=("${PYTHON:-/usr/bin/python3} bench/spider_official.py $OFFICIAL $sp")
fi
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 1 --runs 10 -N "${official[@]}" "$one" "$four"
else
  for c in "$one" "$four"; do
    s=$(date +%s.%N); for _ in 1 2 3 4 5; do $c >/dev/null; done; e=$(date +%s.%N)
    echo "$(echo "($e - $s) / 5" | bc -l | cut -c1-6) s  $c"
  done
fi
