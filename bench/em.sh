#!/usr/bin/env bash
# Times Spider exact set match (EM) end to end (process start to printed
# result, ledger writes included): `rlgate grade --metric spider-em` on the
# 1034 DAIL-SQL predictions (the 972 whose database is here are graded).
# Issue target: at most a tenth of the official `evaluation.py --etype
# match` time on the same machine, in the same run.
#
# With OFFICIAL=DIR, a checkout of taoyds/test-suite-sql-eval (evaluation.py,
# process_sql.py, exec_eval.py; run with a python3 that has nltk with its
# punkt model, sqlparse and tqdm: apt-get install python3-nltk
# python3-sqlparse python3-tqdm), the official evaluator runs in the same
# run, unmodified, through its own command line on the same 972 items
# (gold and predictions without the wta_1 lines, whose database is not
# here). Debian's python3-nltk comes without the Punkt model word_tokenize
# loads; point NLTK_DATA at a directory whose
# tokenizers/punkt/PY3/english.pickle is an untrained, pickled
# nltk.tokenize.punkt.PunktSentenceTokenizer(), the substitution that
# testdata/REFERENCE-VERDICTS.md shows changes no token. Uses hyperfine
# when installed (apt-get install hyperfine); it runs each command's ten
# runs in turn, so on a shared machine read the ratio with the load. With
# jq as well, it ends with the two ratios, by wall and by CPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Static, as the README's install section suggests for a deployment: the
# dynamic loader and cgo's runtime cost ~3 ms of each ~100 ms command.
CGO_ENABLED=0 go build -o "$work/rlgate" ./cmd/rlgate
rl="$work/rlgate --ledger $work/ledger"
$rl init >/dev/null
sp=testdata/spider
$rl data import spider --dev $sp/dev.json --gold $sp/dev_gold.sql --db-root $sp/database --out "$work/spider" >/dev/null
ours="$rl grade --format spider-txt --tasks $work/spider --metric spider-em --predictions $sp/predictions/dail-sql-gpt4.txt"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
$ours | tail -4
official=()
if [ -n "${OFFICIAL:-}" ]; then
  paste $sp/dev_gold.sql $sp/predictions/dail-sql-gpt4.txt | awk -F'\t' '$2 != "wta_1"' >"$work/pairs.tsv"
  cut -f1,2 "$work/pairs.tsv" >"$work/gold.sql"
  cut -f3- "$work/pairs.tsv" >"$work/pred.txt"
  official=("${PYTHON:-/usr/bin/python3} $OFFICIAL/evaluation.py --gold $work/gold.sql --pred $work/pred.txt --db $sp/database --table $sp/tables.json --etype match")
fi
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 1 --runs 10 -N --output=null --export-json "$work/times.json" "${official[@]}" "$ours"
  # The ratios the target is about, by wall time and by CPU time (user +
  # sys, steadier on a shared machine), from the means of this run.
  if [ ${#official[@]} -gt 0 ] && command -v jq >/dev/null; then
    jq -r '.results as $r | "rlgate / official, same run: wall \($r[1].mean / $r[0].mean * 1000 | round / 1000)x, CPU (user + sys) \(($r[1].user + $r[1].system) / ($r[0].user + $r[0].system) * 1000 | round / 1000)x (target: at most 0.1x)"' "$work/times.json"
  fi
else
  for c in "${official[@]}" "$ours"; do
    s=$(date +%s.%N); for _ in 1 2 3 4 5; do $c >/dev/null; done; e=$(date +%s.%N)
    echo "$(echo "($e - $s) / 5" | bc -l | cut -c1-6) s  $c"
  done
fi
