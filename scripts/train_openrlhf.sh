#!/usr/bin/env bash
# Kevin-style multi-turn RL on KernelRefine with OpenRLHF (>= 0.10 dotted flags; checked against 0.11.2).
# Guide: docs/openrlhf.md. Every value below can be overridden from the environment, e.g.
#   MODEL=Qwen/QwQ-32B GPUS=8 N_SAMPLES=16 MAX_TURNS=8 GAMMA=0.4 bash scripts/train_openrlhf.sh
# DRY_RUN=1 prints the launcher's flags, one a line, and runs nothing (the tests parse them with OpenRLHF's parser).
#
# What it does (Kevin's recipe):
# - each prompt is one task; N_SAMPLES episodes of MAX_TURNS refinement turns are sampled per prompt (vLLM);
# - KERNEL_GYM_OPENRLHF_MODE=turns: every turn is its own training sample whose prompt is the env's summarized
#   history and whose reward is the discounted return R_t (RETURN_MODE sum|max, GAMMA), via our launcher
#   kernel_gym.integrations.openrlhf_train (stock OpenRLHF makes one sample per episode; MODE=sum does that);
# - GRPO-style advantages over ADVANTAGE's group (kernel_gym.integrations.advantage, the same option in every adapter):
#   group_all_turns (default, Kevin's recipe): every turn of the N_SAMPLES episodes of a task, normalized by the
#   launcher and kept by OpenRLHF's flash_reinforce estimator; per_turn_index: the same turn of the N_SAMPLES
#   episodes, OpenRLHF's group_norm; no KL term (Kevin found KL slowed learning); DeepSpeed ZeRO-3 for the policy;
# - candidate kernels are evaluated by KERNEL_GYM_EVALUATOR ("local" sandbox pool next to each vLLM actor,
#   "ray" workers on dedicated GPUs, or a `kernel-gym serve` URL), never inside the vLLM actors.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}
GPUS=${GPUS:-8}                       # GPUs per node for the policy (and the colocated reference/vLLM engines)
NODES=${NODES:-1}
VLLM_ENGINES=${VLLM_ENGINES:-$GPUS}   # one vLLM engine per GPU (colocated with training: --train.colocate_all)
SUITE=${SUITE:-level1}                # task suite of the prompt dataset (level1, level2, all)
PROMPTS=${PROMPTS:-data/kernel_gym_${SUITE}_train.jsonl}
N_SAMPLES=${N_SAMPLES:-16}            # episodes per task (the GRPO group)
MAX_TURNS=${MAX_TURNS:-4}             # refinement turns per episode (Kevin: 4 in early runs, 8 later)
GAMMA=${GAMMA:-0.4}                   # discount of the per-turn return (Kevin: 0.4 with sum)
RETURN_MODE=${RETURN_MODE:-sum}       # sum | max (Kevin: max with gamma 0.8 is better with fewer turns)
MODE=${MODE:-turns}                   # turns (one sample per turn) | sum (stock: one sample per episode)
ADVANTAGE=${ADVANTAGE:-group_all_turns} # turns mode: group_all_turns (Kevin) | per_turn_index
PROMPT_BATCH=${PROMPT_BATCH:-8}       # prompts per rollout (x N_SAMPLES episodes; a multiple of MAX_TURNS keeps
                                      # each PPO step's chunk whole tasks: see docs/openrlhf.md)
TRAIN_BATCH=${TRAIN_BATCH:-128}       # samples per optimizer step
MAX_LEN=${MAX_LEN:-16384}             # prompt + response tokens of one sample
MAX_NEW=${MAX_NEW:-8192}              # tokens per response
LR=${LR:-1e-6}
OUT=${OUT:-checkpoints/kernel_gym_${SUITE}}
PYTHON=${PYTHON:-python}              # the Python environment with kernel-gym and OpenRLHF installed

export KERNEL_GYM_OPENRLHF_MODE=$MODE
export KERNEL_GYM_ADVANTAGE=$ADVANTAGE
if [[ "$MODE" == turns && "$ADVANTAGE" == group_all_turns ]]; then ESTIMATOR=${ESTIMATOR:-flash_reinforce}
else ESTIMATOR=${ESTIMATOR:-group_norm}; fi
export KERNEL_GYM_MAX_TURNS=$MAX_TURNS
export KERNEL_GYM_GAMMA=$GAMMA
export KERNEL_GYM_RETURN_MODE=$RETURN_MODE
export KERNEL_GYM_DEVICE=${KERNEL_GYM_DEVICE:-cuda}
export KERNEL_GYM_EVALUATOR=${KERNEL_GYM_EVALUATOR:-local}
export KERNEL_GYM_EVAL_WORKERS=${KERNEL_GYM_EVAL_WORKERS:-2}

ARGS=(
  --actor.model_name_or_path "$MODEL"
  --actor.num_nodes "$NODES"
  --actor.num_gpus_per_node "$GPUS"
  --ref.num_nodes "$NODES"
  --ref.num_gpus_per_node "$GPUS"
  --vllm.num_engines "$VLLM_ENGINES"
  --vllm.tensor_parallel_size 1
  --vllm.gpu_memory_utilization 0.6
  --vllm.enable_prefix_caching
  --vllm.enable_sleep
  --train.colocate_all
  --ds.enable_sleep
  --ds.zero_stage 3
  --ds.param_dtype bf16
  --ds.packing_samples
  --actor.gradient_checkpointing_enable
  --train.agent_func_path "$("$PYTHON" -m kernel_gym.cli openrlhf-agent-path)"
  --data.prompt_dataset "$PROMPTS"
  --data.input_key prompt
  --data.label_key label
  --data.apply_chat_template
  --data.max_len "$MAX_LEN"
  --rollout.max_new_tokens "$MAX_NEW"
  --rollout.n_samples_per_prompt "$N_SAMPLES"
  --rollout.batch_size "$PROMPT_BATCH"
  --rollout.micro_batch_size 4
  --rollout.temperature 1.0
  --train.batch_size "$TRAIN_BATCH"
  --train.micro_batch_size 1
  --train.max_epochs 1
  --train.num_episodes 1
  --algo.advantage.estimator "$ESTIMATOR"
  --algo.kl.init_coef 0
  --actor.adam.lr "$LR"
  --actor.max_norm 0.05
  --actor.eps_clip_low_high 0.2 0.28
  --actor.loss_agg_mode seq-mean-token-mean
  --ckpt.output_dir "$OUT"
  --ckpt.path "$OUT/ckpt"
  --ckpt.save_steps 10
  --logger.logging_steps 1
)

if [[ -n "${DRY_RUN:-}" ]]; then
  printf '%s\n' "${ARGS[@]}"
  exit 0
fi

if [[ ! -f "$PROMPTS" ]]; then
  "$PYTHON" -m kernel_gym.cli openrlhf-data --suite "$SUITE" --split train --out "$PROMPTS"
fi
exec "$PYTHON" -m kernel_gym.integrations.openrlhf_train "${ARGS[@]}" "$@"
