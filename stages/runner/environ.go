package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// envPrefixes and envNames are the allow-list of environment variables a
// run records: what changes a training or evaluation result (devices,
// threads, seeds, library switches), and nothing else, so stray secrets in a
// shell never reach the ledger.
var (
	envPrefixes = []string{
		"CUDA_", "NCCL_", "NVIDIA_", "CUBLAS_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_",
		"TORCH", "PYTORCH_", "VLLM_", "SGLANG_", "RAY_", "VERL_", "SKYRL_", "WANDB_",
		"SLURM_", "RLGATE_", "ACCELERATE_", "DEEPSPEED_", "LLAMAFACTORY_",
	}
	envNames = []string{
		"OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM",
		"LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
		"PYTHONPATH", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV", "GOMAXPROCS",
	}
)

// captureEnv returns the allow-listed variables of environ (as os.Environ
// gives it) with ledger's redaction rule applied, noting each redacted one
// as "env.NAME" in r. Every variable, recorded or not, goes through r, so
// that a secret the stage can print (MY_DB_PASSWORD, a URL with a
// password) is masked in its recorded output too.
func captureEnv(r *ledger.Redactor, environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if !EnvRecorded(name) {
			r.Value("", name, value)
			continue
		}
		out[name] = r.Value("env."+name, name, value)
	}
	return out
}

// EnvRecorded reports whether a run records the environment variable name
// (the allow-list above): a reproduction sets exactly these from the
// recording.
func EnvRecorded(name string) bool {
	if slices.Contains(envNames, name) {
		return true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// LookPathIn finds a command named without a slash in the PATH of env, as
// a shell started with env would, so a stage's environment decides which
// binary runs; ok is false when env sets no PATH or none holds it (then
// rlgate's own PATH applies).
func LookPathIn(env []string, name string) (string, bool) {
	if strings.ContainsRune(name, filepath.Separator) {
		return "", false
	}
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true
		}
	}
	if !ok {
		return "", false
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
