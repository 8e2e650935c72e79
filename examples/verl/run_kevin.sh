#!/usr/bin/env bash
# Train on KernelRefine with verl (0.9.1): Kevin's recipe (MODE=turns, one row per turn with its discounted return)
# or verl's stock multi-turn rows (MODE=trajectory). Every setting is an environment variable with a default;
# DRY_RUN=1 prints the hydra overrides, one a line, and exits (tests/integrations/test_verl.py composes verl's own
# config with them, so an unknown key fails there).
#
#   kernel-gym serve --device cuda --workers 8 --host 0.0.0.0 &      # evaluation, outside verl's workers
#   python -m kernel_gym.integrations.verl_data --suite level1 --out data/kg_train.parquet --max-turns 4
#   python -m kernel_gym.integrations.verl_data --suite level1 --split eval --out data/kg_eval.parquet --max-turns 4
#   MODEL=Qwen/Qwen2.5-Coder-7B-Instruct GPUS=8 bash examples/verl/run_kevin.sh
#   bash examples/verl/run_kevin.sh --smoke    # no GPU, no Hub: examples/verl/smoke.py (verl's worker, advantage
#                                              # and loss on the CPU with a tiny random model, one step, ~20 s)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = --smoke ]; then
  shift
  exec "${PYTHON:-python3}" "$HERE/smoke.py" "$@"
fi

MODE=${MODE:-turns}                          # turns | trajectory
MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
GPUS=${GPUS:-8}
NODES=${NODES:-1}
TRAIN=${TRAIN:-data/kg_train.parquet}
VAL=${VAL:-data/kg_eval.parquet}
BATCH=${BATCH:-16}                           # prompts (tasks) per step
N=${N:-8}                                    # episodes per prompt (the advantage's group)
PROMPT_LEN=${PROMPT_LEN:-8192}               # turns mode: one observation; trajectory mode: the first one
RESPONSE_LEN=${RESPONSE_LEN:-8192}           # turns mode: one answer; trajectory mode: every answer and feedback
TP=${TP:-2}
EPOCHS=${EPOCHS:-10}
EVALUATOR=${KERNEL_GYM_EVALUATOR:-http://127.0.0.1:8000}
if [ "$MODE" = turns ]; then ESTIMATOR=${ESTIMATOR:-grpo_vectorized}; else ESTIMATOR=${ESTIMATOR:-grpo}; fi

ARGS=(
  "algorithm.adv_estimator=${ESTIMATOR}"
  "algorithm.use_kl_in_reward=False"
  "data.train_files=${TRAIN}"
  "data.val_files=${VAL}"
  "data.train_batch_size=${BATCH}"
  "data.max_prompt_length=${PROMPT_LEN}"
  "data.max_response_length=${RESPONSE_LEN}"
  "data.return_raw_chat=True"
  "data.filter_overlong_prompts=True"
  "actor_rollout_ref.model.path=${MODEL}"
  "actor_rollout_ref.model.use_remove_padding=True"
  "actor_rollout_ref.model.enable_gradient_checkpointing=True"
  "actor_rollout_ref.actor.optim.lr=1e-6"
  "actor_rollout_ref.actor.ppo_mini_batch_size=${BATCH}"
  "actor_rollout_ref.actor.use_kl_loss=False"
  "actor_rollout_ref.actor.use_dynamic_bsz=True"
  "actor_rollout_ref.rollout.name=vllm"
  "actor_rollout_ref.rollout.n=${N}"
  "actor_rollout_ref.rollout.tensor_model_parallel_size=${TP}"
  "actor_rollout_ref.rollout.gpu_memory_utilization=0.6"
  "actor_rollout_ref.rollout.calculate_log_probs=True"
  "actor_rollout_ref.rollout.agent.agent_loop_config_path=${HERE}/kernel_gym_${MODE}.yaml"
  "actor_rollout_ref.rollout.agent.default_agent_loop=kernel_gym"
  "trainer.use_v1=True"
  "trainer.n_gpus_per_node=${GPUS}"
  "trainer.nnodes=${NODES}"
  "trainer.total_epochs=${EPOCHS}"
  "trainer.project_name=kernel-gym"
  "trainer.experiment_name=kevin-${MODE}"
  "trainer.logger=[console]"
  "+ray_kwargs.ray_init.runtime_env.env_vars.KERNEL_GYM_EVALUATOR=${EVALUATOR}"
)

if [ "${DRY_RUN:-0}" = 1 ]; then
  printf '%s\n' "${ARGS[@]}"
  exit 0
fi
# before verl starts anything (it hung on a machine without a GPU): what is missing, in one line (kernel-gym doctor)
python3 -m kernel_gym.cli doctor --require gpu ray verl vllm --purpose "verl training (examples/verl/run_kevin.sh)"
exec python3 -m verl.trainer.main_ppo "${ARGS[@]}" "$@"
