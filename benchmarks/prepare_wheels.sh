#!/usr/bin/env bash
# What device_session.sh needs carried to the GPU machine (it has no network): run here, then carry [".whl"].
#   bash benchmarks/prepare_wheels.sh
# .whl/ (git-ignored): the wheels the device lacks (gymnasium and its two dependencies, nvidia-cutlass's headers, Helion
# and its imports; CuTe DSL's and TileLang's wheels exceed one call's 64 MiB: see docs/backends.md) and
# old_main.tar, main at
# 9cb1555 (the throughput-*-old stages' baseline).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download -q --no-deps -d .whl gymnasium farama_notifications cloudpickle "nvidia-cutlass==4.2.0.0"
# Helion (backend="helion") and what it imports (its autotuner's scikit-learn only when autotuning, which runners
# forbid); the device runs Python 3.12: binary wheels for it. helion 1.5.0, not pyproject.toml's 1.5.1: the device's
# torch 2.11 lacks torch._inductor.runtime.triton_compat.IntelGPUError, which helion 1.5.1 imports (carry_parts.sh's
# DEVICE_HELION says more)
python3 -m pip download -q --no-deps -d .whl --only-binary=:all: --python-version 3.12 \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  "helion==1.5.0" filecheck rich markdown-it-py mdurl pygments psutil
git archive 9cb1555 -o .whl/old_main.tar
ls -la .whl
