#!/usr/bin/env bash
# The README's install: a virtual environment in .venv with kernel-gym (editable) and everything its tests use, so
# that `.venv/bin/python -m pytest -q` runs every CPU test (only GPU tests skip). About 5 minutes on a fresh machine.
#
#   bash scripts/install.sh            # creates or updates ./.venv (PYTHON=python3.12 picks another interpreter)
#
# What it installs:
# - kernel-gym[dev]: torch, Triton, gymnasium; pytest and ruff; matplotlib, notebook execution, transformers,
#   datasets (rollouts, reports, preference pairs); Ray (kernel-gym[ray]) and the HTTP service (kernel-gym[serve]);
#   TRL (kernel-gym[trl]: its GRPOTrainer runs the adapter's tests on CPU) and openenv-core (kernel-gym[openenv]);
#   Helion (kernel-gym[helion]: backend="helion", its tests run on CPU under Triton's interpreter); the environment
#   standards (kernel-gym[hubs]: verifiers 0.3.1 and skyrl-gym 0.4.0);
# - OpenRLHF's Python package *without* its GPU stack (vLLM, DeepSpeed, flash-attn: `--no-deps`), plus the two light
#   packages its modules import: enough for kernel_gym.integrations.openrlhf and its tests. Training itself needs the
#   full stack on GPU machines: `pip install "kernel-gym[train]"` (docs/openrlhf.md).
# - verl the same way (`--no-deps`, plus the few packages its agent-loop modules import): enough for
#   kernel_gym.integrations.verl and its tests; GPU training: `pip install "kernel-gym[verl]"` (docs/trainers.md).
# - NeMo Gym's package the same way (`--no-deps --ignore-requires-python`: nemo-gym 0.7.0 declares Python >=3.13.14
#   and pins openai==2.44.0, ray[default], mlflow, ...), plus the four packages its server modules import that
#   nothing else here brings: enough for kernel_gym.integrations.nemo_gym and its tests (docs/trainers.md).
#
# Opt-in: KERNEL_GYM_SKYRL=1 also makes .venv-skyrl (scripts/skyrl_python.sh), the Python >= 3.12 environment in
# which tests/integrations/test_skyrl_loop.py runs SkyRL's own rollout code (skyrl 0.4.0 needs 3.12; .venv may be
# older). Where no Python >= 3.12 is on PATH it builds CPython 3.13 from source (about 1 minute on 2 cores, plus
# about 1 minute of packages). CI sets it; without it that one test skips.
#
#   KERNEL_GYM_SKYRL=1 bash scripts/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
OPENRLHF_VERSION=0.11.2  # the adapter patches OpenRLHF's SamplesGenerator: pinned to the version the tests verified
VERL_VERSION=0.9.1  # kernel_gym.integrations.verl relies on its agent-loop worker's shape: the version the tests verified
TRANSFERQUEUE_VERSION=0.1.11
NEMO_GYM_VERSION=0.7.0  # kernel_gym.integrations.nemo_gym builds on its GymnasiumServer and gymnasium_agent

if [ "${KERNEL_GYM_SKYRL:-0}" = 1 ]; then  # SkyRL's interpreter (a CPython build where none is found) meanwhile
  mkdir -p .skyrl
  bash scripts/skyrl_python.sh --interpreter >.skyrl/interpreter.log 2>&1 &
  SKYRL_INTERPRETER=$!
  trap 'kill "$SKYRL_INTERPRETER" 2>/dev/null || true' EXIT  # (a failed pip step leaves no build behind)
fi
"$PYTHON" -m venv .venv
# Byte-compiled at install (~1 CPU-minute): the evaluation's runner processes import torch and triton from a
# read-only site-packages (they are confined, and never write bytecode), so without the .pyc files every runner start
# would compile them again (measured: ~2x the CPU of a runner's start-up).
.venv/bin/python -m pip install -q --no-warn-conflicts -e ".[dev]" pylatexenc aiohttp
.venv/bin/python -m pip install -q --no-warn-conflicts --no-deps "openrlhf==${OPENRLHF_VERSION}"
# verl likewise: its agent-loop package and TransferQueue (its V1 trainer's store) without their pins (verl 0.9.1 pins
# transformers<5.11 and pulls wandb, tensorboard, ray[default]), plus the packages its agent-loop modules import.
.venv/bin/python -m pip install -q --no-warn-conflicts --no-deps "verl==${VERL_VERSION}" "transferqueue==${TRANSFERQUEUE_VERSION}"
# (--no-warn-conflicts: OpenRLHF's and verl's GPU pins are left out on purpose, so pip's resolver would print an
# ERROR listing them at every install; the line below says it once, plainly)
.venv/bin/python -m pip install -q --no-warn-conflicts "tensordict==0.10.0" hydra-core codetiming cachetools msgspec \
  torchdata peft
.venv/bin/python -m pip install -q --no-warn-conflicts --no-deps --ignore-requires-python "nemo-gym==${NEMO_GYM_VERSION}"
.venv/bin/python -m pip install -q --no-warn-conflicts itsdangerous httptools yappi wandb
echo "note: OpenRLHF and verl are installed without their GPU stacks (vLLM, DeepSpeed, flash-attn): enough for their" \
  "adapters and tests; so is nemo-gym (its Python floor and pins); \`pip check\` lists those pins as missing, as" \
  "expected (docs/openrlhf.md, docs/trainers.md)"
if [ "${KERNEL_GYM_SKYRL:-0}" = 1 ]; then
  wait "$SKYRL_INTERPRETER" || { cat .skyrl/interpreter.log >&2; exit 1; }
  cat .skyrl/interpreter.log
  bash scripts/skyrl_python.sh
fi
echo "kernel-gym installed in .venv ($(.venv/bin/kernel-gym --version)); run .venv/bin/kernel-gym demo"
