// Package torchtrainer holds an integration test that runs train.py, a tiny
// PyTorch causal language model, through rlgate's stage runner with
// lr > 0 and lr = 0 and checks the weight audit on the checkpoints it
// saves. It needs python3-torch and runs only with the torch build tag:
//
//	go test -tags torch ./examples/torch-trainer/
package torchtrainer
