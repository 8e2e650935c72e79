#!/usr/bin/env bash
# What device_session.sh needs carried to the GPU machine (it has no network): run here, then carry [".whl"].
#   bash benchmarks/prepare_wheels.sh
# .whl/ (git-ignored): the wheels the device lacks (gymnasium and its two dependencies, nvidia-cutlass's headers) and
# old_main.tar, main at
# 9cb1555 (the throughput-*-old stages' baseline).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download -q --no-deps -d .whl gymnasium farama_notifications cloudpickle "nvidia-cutlass==4.2.0.0"
git archive 9cb1555 -o .whl/old_main.tar
ls -la .whl
