package runner

import (
	"slices"
	"strings"
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
	// secretMarkers: a recorded name containing any of these has its value
	// replaced by Redacted.
	secretMarkers = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}
)

// Redacted replaces the value of a variable whose name marks it secret.
const Redacted = "[redacted]"

// CaptureEnv returns the allow-listed variables of environ (as os.Environ
// gives it), with secret-looking values redacted.
func CaptureEnv(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !allowed(name) {
			continue
		}
		if secret(name) {
			value = Redacted
		}
		out[name] = value
	}
	return out
}

func allowed(name string) bool {
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

func secret(name string) bool {
	up := strings.ToUpper(name)
	for _, m := range secretMarkers {
		if strings.Contains(up, m) {
			return true
		}
	}
	return false
}
