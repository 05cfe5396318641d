// Package torchtrainer holds an integration test that runs train.py, a tiny
// PyTorch causal language model, through rlgate's stage runner with
// lr > 0 and lr = 0 and checks the weight audit on the checkpoints it
// saves. It needs python3-torch and runs only with the torch build tag
// (.ci/run installs torch and runs it on every submission); without torch
// it fails, rather than print a bare "ok", unless RLGATE_TORCH_SKIP=1:
//
//	go test -tags torch ./examples/torch-trainer/
package torchtrainer
