#!/usr/bin/env sh
# The offline evaluation flow on the BIRD mini-dev data shipped in testdata/:
# a fresh ledger, the benchmark imported into public tasks and gold, the two
# official baselines (GPT-4, Mixtral-8x7B) graded as evaluation_ex.py grades
# them, a paired comparison, and a full verify of the ledger.
#
#   sh examples/quickstart.sh [WORKDIR]     (default: ./quickstart)
#
# WORKDIR is relative to where you stand. It must be new, empty, or made by
# an earlier run of this script; nothing in it but what the script made is
# ever removed.
set -eu
work=${1:-quickstart}
case $work in
/*) ;;
*) work=$PWD/$work ;;
esac
marker=$work/.quickstart # says this script made the folder's rlgate, ledger and bird
if [ -e "$marker" ]; then
  rm -rf "$work/rlgate" "$work/ledger" "$work/bird" # an earlier run's, and nothing else
elif [ -e "$work" ] && [ -n "$(ls -A "$work")" ]; then
  echo "quickstart: $work holds files this script did not make; give a new or empty directory" >&2
  exit 2
fi
mkdir -p "$work"
: >"$marker"
cd "$(dirname "$0")/.."
go build -o "$work/rlgate" ./cmd/rlgate
rl() { "$work/rlgate" --ledger "$work/ledger" "$@"; }
bird=testdata/bird

rl init
rl data import bird --dev $bird/mini_dev_sqlite.json --db-root $bird/dev_databases --out "$work/bird"
rl grade --format bird-json --tasks "$work/bird" --metric bird \
  --predictions $bird/predictions/gpt-4.json --predictions $bird/predictions/mixtral-8x7b.json
gpt4=$(rl log --kind run.start --json | grep -o '"run": "grade-gpt-4[^"]*"' | cut -d'"' -f4)
mixtral=$(rl log --kind run.start --json | grep -o '"run": "grade-mixtral[^"]*"' | cut -d'"' -f4)
rl compare --runs "mixtral=$mixtral,gpt4=$gpt4"
rl verify
