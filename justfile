# Wrappers around the README's commands; `go` alone is enough without just.

# run the tests (what CI runs)
test:
    go vet ./...
    go test ./...

# the slow and fuzz checks that stay out of CI
fuzz seconds="30":
    go test ./ledger -run xxx -fuzz FuzzCanonicalJSON -fuzztime {{seconds}}s

# benchmarks named in the issues (see docs/BENCHMARKS.md)
bench:
    go test ./ledger -run xxx -bench . -benchtime 20x
    bench/hash.sh
    bench/grade.sh
    bench/compare.sh
    bench/ckpt.sh

# integration test with a real PyTorch trainer (needs: apt-get install python3-torch,
# or RLGATE_TORCH_PYTHON; fails without torch unless RLGATE_TORCH_SKIP=1); CI runs it
torch:
    go test -tags torch ./examples/torch-trainer/ -v
