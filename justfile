# Wrappers around the README's commands; `go` alone is enough without just.

# run the tests (what CI runs)
test:
    go vet ./...
    go test ./...

# every fuzz target for the given time each (they stay out of CI)
fuzz seconds="60":
    #!/usr/bin/env bash
    set -euo pipefail
    grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
      for t in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
        echo "== $t ($(dirname "$f"))"
        go test "./$(dirname "$f")" -run XXX -fuzz "^$t\$" -fuzztime {{seconds}}s
      done
    done

# benchmarks named in the issues (see docs/BENCHMARKS.md)
bench:
    go test ./ledger -run xxx -bench . -benchtime 20x
    bench/hash.sh
    bench/grade.sh
    bench/compare.sh
    bench/ckpt.sh
    go test ./stages/export -run x -bench ExportSFT100k -benchtime 1x

# integration test with a real PyTorch trainer (needs: apt-get install python3-torch,
# or RLGATE_TORCH_PYTHON; fails without torch unless RLGATE_TORCH_SKIP=1); CI runs it
torch:
    go test -tags torch ./examples/torch-trainer/ -v

# export rl's parquet read back by an independent reader, the npm package
# hyparquet (needs node and npm); CI runs it
hyparquet:
    go test -tags hyparquet -run TestParquetReadByHyparquet ./stages/export/ -v
