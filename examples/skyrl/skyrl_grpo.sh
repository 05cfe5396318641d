#!/bin/sh
# skyrl_grpo.sh INIT OUT METRICS: one GRPO stage of the example with
# SkyRL's text2sql environment on 8 GPUs, from the checkpoint INIT,
# exporting the Hugging Face weights to OUT and copying SkyRL's TensorBoard
# event file to METRICS, which the stage ingests. lr, kl_coef, use_kl_loss and db_root come
# from the stage's params (RLGATE_PARAM_*); lr = 0 is the No-update control.
set -eu
init=$1 out=$2 metrics=$3
export TENSORBOARD_DIR="$PWD/$metrics.d"
# skyrl-gym's text2sql environment opens <db_path>/<data>/database/<db_id>/
# <db_id>.sqlite (OmniSQL's layout; rlgate export rl writes data = spider),
# so db_path gets a spider/database link to the stage's db_root.
mkdir -p skyrl_db/spider
ln -sfn "$PWD/$RLGATE_PARAM_DB_ROOT" skyrl_db/spider/database
cd SkyRL/skyrl-train
uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base \
  data.train_data="['$OLDPWD/rl_data/train.parquet']" \
  data.val_data="['$OLDPWD/rl_data/train.parquet']" \
  trainer.algorithm.advantage_estimator=grpo \
  trainer.algorithm.policy_loss_type=dual_clip \
  trainer.algorithm.eps_clip_low=0.2 \
  trainer.algorithm.eps_clip_high=0.28 \
  trainer.algorithm.dynamic_sampling.type=filter \
  trainer.algorithm.use_kl_loss="$RLGATE_PARAM_USE_KL_LOSS" \
  trainer.algorithm.kl_loss_coef="$RLGATE_PARAM_KL_COEF" \
  trainer.policy.model.path="$OLDPWD/$init" \
  trainer.policy.optimizer_config.lr="$RLGATE_PARAM_LR" \
  trainer.strategy=fsdp2 \
  trainer.placement.colocate_all=true \
  trainer.placement.policy_num_gpus_per_node=8 \
  trainer.placement.ref_num_gpus_per_node=8 \
  generator.backend=vllm \
  generator.num_inference_engines=4 \
  generator.inference_engine_tensor_parallel_size=2 \
  generator.run_engines_locally=true \
  generator.async_engine=true \
  generator.batched=false \
  generator.n_samples_per_prompt=8 \
  generator.max_turns=6 \
  environment.env_class=text2sql \
  environment.skyrl_gym.text2sql.db_path="$OLDPWD/skyrl_db" \
  trainer.epochs=1 \
  trainer.train_batch_size=64 \
  trainer.policy_mini_batch_size=64 \
  trainer.logger=tensorboard \
  trainer.ckpt_path="$OLDPWD/$out.ckpt" \
  trainer.export_path="$OLDPWD/$out"
cd "$OLDPWD"
cp "$(ls -t "$TENSORBOARD_DIR"/events.out.tfevents.* | head -n1)" "$metrics"
