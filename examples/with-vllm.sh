#!/bin/sh
# with-vllm.sh MODEL_DIR PORT CMD...: serve MODEL_DIR with vLLM's
# OpenAI-compatible server on 127.0.0.1:PORT, wait until it answers, run
# CMD with RLGATE_ENDPOINT set to its base URL and RLGATE_MODEL_IDENTITY to
# the checkpoint's model identity (rlgate ckpt digest), stop the server, and
# exit with CMD's code. The examples' evaluation and synthesis stages use it.
set -eu
model=$1 port=$2
shift 2
vllm serve "$model" --host 127.0.0.1 --port "$port" --served-model-name policy --seed 0 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; do
  kill -0 $server || { echo "vllm serve $model exited before it answered" >&2; exit 1; }
  sleep 5
done
RLGATE_ENDPOINT="http://127.0.0.1:$port/v1"
RLGATE_MODEL_IDENTITY=$(rlgate ckpt digest "$model" | head -n1 | cut -d" " -f1)
export RLGATE_ENDPOINT RLGATE_MODEL_IDENTITY
"$@"
