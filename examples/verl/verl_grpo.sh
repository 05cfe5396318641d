#!/bin/sh
# verl_grpo.sh INIT OUT METRICS: one GRPO stage of the example with veRL on
# 8 GPUs, from the checkpoint INIT, with DAPO's clip-higher (0.2 / 0.28),
# writing step metrics with veRL's file logger to METRICS and the Hugging
# Face weights to OUT. (DAPO's dynamic sampling, algorithm.filter_groups,
# needs veRL's recipe.dapo.main_dapo entry point instead of main_ppo.) lr, kl_coef,
# use_kl_loss and db_root come from the stage's params (RLGATE_PARAM_*);
# lr = 0 is the No-update control.
set -eu
init=$1 out=$2 metrics=$3
export VERL_FILE_LOGGER_PATH="$metrics"
python3 -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo \
  algorithm.use_kl_in_reward=False \
  data.train_files="['rl_data/train.parquet']" \
  data.val_files="['rl_data/train.parquet']" \
  data.train_batch_size=64 \
  data.max_prompt_length=6000 \
  data.max_response_length=2048 \
  actor_rollout_ref.model.path="$init" \
  actor_rollout_ref.actor.optim.lr="$RLGATE_PARAM_LR" \
  actor_rollout_ref.actor.ppo_mini_batch_size=64 \
  actor_rollout_ref.actor.clip_ratio_low=0.2 \
  actor_rollout_ref.actor.clip_ratio_high=0.28 \
  actor_rollout_ref.actor.use_kl_loss="$RLGATE_PARAM_USE_KL_LOSS" \
  actor_rollout_ref.actor.kl_loss_coef="$RLGATE_PARAM_KL_COEF" \
  actor_rollout_ref.rollout.name=vllm \
  actor_rollout_ref.rollout.n=8 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
  custom_reward_function.path=sql_reward.py \
  custom_reward_function.name=compute_score \
  trainer.logger="['console','file']" \
  trainer.n_gpus_per_node=8 \
  trainer.nnodes=1 \
  trainer.total_epochs=1 \
  trainer.default_local_dir="$out.ckpt"
# veRL saves FSDP shards; merge the actor into Hugging Face safetensors.
last=$(ls -d "$out.ckpt"/global_step_* | sort -t_ -k3 -n | tail -n1)
python3 -m verl.model_merger merge --backend fsdp --local_dir "$last/actor" --target_dir "$out"
