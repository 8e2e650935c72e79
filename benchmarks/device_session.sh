#!/usr/bin/env bash
# Next session's GPU plan (30 device-minutes: ~1.5 to start, the ~30 s a machine idles between calls counts too;
# refused starts cost 1-3 min each: the 2026-12-07f session lost ~6 min to four). Every call carries
# [".whl_parts/<n>"] alone (`bash benchmarks/carry_parts.sh split`: 4 parts of <= 56 MiB) and runs
# `bash benchmarks/device_session.sh STAGES` (timeout_s 600), back to back: joined parts and /tmp/site live only while
# the machine is held. 2026-12-07g ran (a) (without test_gpu_signals and test_gpu_env, cut by the bound) and (b)'s
# clients stage with test_gpu_shapes: see RESULTS.md; the rest of (b), (c) and (d) wait.
#   NEXT (after 2026-12-08h: one call, see RESULTS.md "One call at the end of the eighth session"), part 1 each:
#   (0) RATES="0 0.2" JOBS=4 GPU_TESTS="tests/anti_hacking/test_gpu_library_policy.py
#       tests/judge/test_gpu_oracle.py::test_genuine_solution_within_budget_on_cuda[level3_moe_topk_experts]" ...
#       gpu-tests:200 faults:250  (#37's last test with the ablation's fresh-memory fill (b5501c9): 20 + 1 passed;
#       the MoE's oracle with the twin; faults: the rows now carry every job's stage times: is the 20 % run's
#       0.58x the runners replaced after faults (no spare until a slot's first replacement, ~8 s a cuda start)?)
#   (0b) compare-cost ran (71 ms a round on a 512 MiB output, the budget's float64 pass 45 ms of it): a fused
#       comparison kernel is the next change for #36's 0.6 s; measure it with this stage and clients:250
#   (1) probe-stall:90 (does a spin, trap or illegal access in one process stall a probe kernel in another? If a
#       spin does not and a trap does, run faults:300 again with KERNEL_GYM_STALL_PROBE=1 RATES=0.2 and compare with
#       (0)'s 20 %: the "alone" confirmations' drains held 20 % at 0.64x on 2026-12-07g)
#   (2) CLIENTS=8 REPEATS=3 clients:250 (the timing stage's parts, now in its summary: 727 ms median, goal 0.6 s;
#       a timed round's check now reads each output 4 times instead of 7) and gpu-tests:300 of what is left:
#       test_confine_gpu (its private /dev/shm xfail now prints its reason: -rx), test_helion_gpu,
#       test_gpu_library_policy, test_launch_gate, test_judge_gpu, test_faults_gpu, test_gpu_env, test_gpu_signals
#   (a) part 1  #35 and the timing fix: RATES="0 0.2" JOBS=4 GPU_TESTS="tests/anti_hacking/test_gpu_shapes.py
#       tests/gpu/test_gpu_env.py tests/judge/test_gpu_oracle.py tests/signals/test_gpu_signals.py
#       tests/anti_hacking/test_gpu_attacks.py::test_gpu_project_solution_accepted" ...  (the MoE's outlier_fraction)
#       faults:230 gpu-tests:300  (faults: 8 slots in "after", "judge restarts" 0, genuine 32/32; gpu-tests: no
#       genuine `timeout`)
#   (b) part 1 again  #36's timing goals and the rest: CLIENTS=8 REPEATS=3 GPU_TESTS="tests/gpu/test_confine_gpu.py
#       tests/gpu/test_helion_gpu.py tests/anti_hacking/test_gpu_library_policy.py tests/gpu/test_launch_gate.py
#       tests/gpu/test_judge_gpu.py::test_a_killed_runners_buffers_go_back
#       tests/gpu/test_faults_gpu.py::test_a_fresh_runners_first_triton_call_fits_a_tight_call_limit" ...
#       clients:250 gpu-tests:300  (clients: CV <= 2 %, no timeout; test_confine_gpu's private /dev/shm test is
#       xfail: its bind error now names the cause)
#   (c) part 2, then part 3  #39: DSL_TESTS=tests/gpu/test_cute_dsl_gpu.py BACKENDS="triton cuda helion cute_dsl" ...
#       dsl-tests:120 backends:300
#   (d) part 4 (tilelang whole)  DSL_TESTS=tests/gpu/test_tilelang_gpu.py BACKENDS=tilelang ... dsl-tests:90
#       backends:90 level3:180 (#40: solutions, then eager, then torch.compile baselines)
#   Stage bounds: gpu-tests at ~10 s a test run one by one; faults at JOBS=4 ~60 s (0 %) and ~100 s (20 %) a rate;
#   JOBS=8 doubles them.
#   Read each reply's session.log: "parts: ..." lines say what is whole; a stage cut by its bound says so in its
#   "=== stage rc=124" line.
#
# One command on the lent GPU machine: install the carried wheels (.whl/, made by benchmarks/prepare_wheels.sh, and
# the parts of benchmarks/carry_parts.sh, joined in /tmp/parts), then run the named stages in order.
# Logs go to $OUT (the device tool brings them back). Usage, from the repo root on the device:
#   bash benchmarks/device_session.sh warm gpu-tests compile
#   bash benchmarks/device_session.sh cv throughput-cuda c2cuda-baselines
#   bash benchmarks/device_session.sh compile:220 cv:60      # stage:seconds bounds one stage
# Each stage is bounded by its own timeout (STAGE:SECONDS, else STAGE_TIMEOUT_S, default 400 s) so one stuck stage
# cannot eat the call (pytest stages get SIGINT first, so their summary of failures is still printed). GPU_TESTS picks the tests of the gpu-tests stage (default: all of tests/).
set -u -o pipefail
OUT=${OUT:-/tmp/kg_out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
fi
bash benchmarks/carry_parts.sh join 2>&1 | tee -a "$OUT/session.log"  # .whl_parts/<n> carried: joined, whole groups installed
# (nvidia-cutlass-dsl finds its `cutlass` package through a .pth file, which a --target folder does not read)
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:$PWD PYTHONUNBUFFERED=1 \
  KERNEL_GYM_CACHE=${KERNEL_GYM_CACHE:-/tmp/kgcache}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/session.log"
if [ -n "${MEMWATCH:-}" ]; then  # GPU memory per process over the whole call (benchmarks/memwatch.sh)
  bash benchmarks/memwatch.sh "$OUT/memwatch.log" & MEMWATCH_PID=$!
  trap 'kill $MEMWATCH_PID 2>/dev/null; for f in $(find / -xdev -name "judge-cuda-*.log" 2>/dev/null); do
    echo "=== $f" >> "$OUT/memwatch.log"; tail -c 20000 "$f" >> "$OUT/memwatch.log"; done' EXIT
fi
for arg in "$@"; do
  stage=${arg%%:*}; T=${STAGE_TIMEOUT_S:-400}
  [ "$stage" != "$arg" ] && T=${arg#*:}  # stage:seconds
  echo "=== $stage $(date -u +%T)" | tee -a "$OUT/session.log"
  { case $stage in
    warm)  # build every load_inline solution the GPU tests use into the shared cache, several at once
      timeout "$T" python3 scripts/warm_cuda_cache.py tests/solutions/cuda/*.py --workers 3 &
      for t in saxpy row_sum histogram spmv_csr; do
        timeout "$T" python3 scripts/warm_cuda_cache.py "tests/solutions/c2cuda/${t}_cuda.py" --task "c2cuda/$t" \
          --workers 1 &
      done
      wait ;;
    gpu-tests)
      KG_GPU_ORACLE_JSON=$OUT/oracle.json KG_GPU_POLICY_JSON=$OUT/policy.json \
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu ${GPU_TESTS:-tests} -p no:cacheprovider -v -rfEx --durations=15 ;;
    gpu-rest)  # pytest -m gpu tests without the files the plan's other stages run (fault-tests, judge-tests,
      # confine-proc, dsl-tests, level3); the oracle's and the library policy's numbers (#37) come back as JSON
      KG_GPU_ORACLE_JSON=$OUT/oracle.json KG_GPU_POLICY_JSON=$OUT/policy.json \
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests $(for f in gpu/test_judge_gpu gpu/test_faults_gpu \
        gpu/test_confine_gpu anti_hacking/test_gpu_attacks gpu/test_gpu_env gpu/test_helion_gpu gpu/test_cute_dsl_gpu \
        gpu/test_tilelang_gpu gpu/test_level3_gpu tasks/test_gpu_baselines; do echo "--ignore=tests/$f.py"; done) \
        -p no:cacheprovider -q -rfE --durations=15 ;;
    dsl-tests)  # #39: Helion, CuTe DSL and TileLang solutions and attacks judged on the GPU (a missing package: skipped)
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu ${DSL_TESTS:-tests/gpu/test_helion_gpu.py \
        tests/gpu/test_cute_dsl_gpu.py tests/gpu/test_tilelang_gpu.py} -p no:cacheprovider -q -rfEs --durations=10 ;;
    backends)  # #39: compile time per backend (cold, warm; 8 concurrent jobs) and do_bench agreement (bench_backends.py)
      names=${BACKENDS:-all}
      timeout "$T" python3 benchmarks/bench_backends.py ${BACKENDS:+--backends $BACKENDS} --jobs ${BACKEND_JOBS:-8} \
        --repeats ${VALUE_SETS:-3} --out "$OUT/backends_${names// /_}" ;;
    level3)  # #40: the level-3 solutions at full size, every level-3 reference over 0.1 ms, eager and torch.compile
      # baselines into $OUT/manifest.json (kept in /tmp between calls: --missing goes on where a bound stopped it)
      M=/tmp/kg_level3_manifest.json; [ -f $M ] || cp tasks/manifest.json $M
      ids=$(python3 -c "from kernel_gym.tasks import list_tasks; print(' '.join(list_tasks('level3')))")
      timeout -s INT -k 20 $((T * 2 / 5)) python3 -m pytest -m gpu tests/gpu/test_level3_gpu.py \
        tests/tasks/test_gpu_baselines.py -k level3 -n 4 -p no:cacheprovider -q -rfE --durations=10
      timeout $((T / 5)) python3 -m kernel_gym.tasks.measure --out $M --only $ids --baseline eager --missing
      timeout $((T * 2 / 5)) python3 -m kernel_gym.tasks.measure --out $M --only $ids --baseline compile --missing --no-alt
      cp $M "$OUT/manifest.json" ;;
    memory)  # #40: every task's judged-run memory at full size, measured (benchmarks/task_memory.py), level 3 first
      timeout "$T" python3 benchmarks/task_memory.py --budget-s $((T - 30)) --out "$OUT" ;;
    compile)
      timeout "$T" python3 benchmarks/bench_speed.py compile --stock-builds 1 --cold-builds ${COLD_BUILDS:-3} --out "$OUT" ;;
    cv)
      timeout "$T" python3 benchmarks/bench_speed.py cv --repeats 5 --workers 4 --out "$OUT/cv_$(date -u +%H%M%S)" ;;
    cv-1)  # control: one worker, nothing else on the GPU
      timeout "$T" python3 benchmarks/bench_speed.py cv --repeats 5 --workers 1 --out "$OUT/w1_$(date -u +%H%M%S)" ;;
    cv-fixed)  # control: the fixed 30 rounds of the stock timer (GC off as in every run)
      timeout "$T" python3 benchmarks/bench_speed.py cv --repeats 5 --workers 4 --timing-trials 30 --out "$OUT/fixed_$(date -u +%H%M%S)" ;;
    cv-inline)  # control: no launch gate (readings include host launch latency)
      timeout "$T" python3 benchmarks/bench_speed.py cv --repeats 5 --workers 4 --no-gate --out "$OUT/inline_$(date -u +%H%M%S)" ;;
    host)  # what the host is: CPUs, NUMA nodes, the GPU's local CPUs, the GPU's link to them
      { lscpu | grep -E "Model name|^CPU\(s\)|NUMA|Thread|MHz"; nvidia-smi topo -m;
        for d in /sys/bus/pci/devices/*; do [ "$(cat $d/vendor 2>/dev/null)" = 0x10de ] && [ "$(cat $d/class)" = 0x030200 ] \
          && echo "$d numa_node=$(cat $d/numa_node) local_cpulist=$(cat $d/local_cpulist)"; done;
        python3 -c "import os; print('affinity', sorted(os.sched_getaffinity(0)))"; } ;;
    cv-100)
      timeout "$T" python3 benchmarks/bench_speed.py cv --repeats 5 --workers 4 --timing-trials 100 --out "$OUT" ;;
    throughput-cuda)
      timeout "$T" python3 benchmarks/bench_speed.py throughput --kind cuda --n 32 --stock-sample 2 --workers 8 \
        --out "$OUT" ;;
    throughput-triton)
      timeout "$T" python3 benchmarks/bench_speed.py throughput --kind triton --n 64 --stock-sample 6 --workers 8 \
        --out "$OUT" ;;
    step-latency)
      timeout "$T" python3 benchmarks/step_latency.py --repeats 3 --out "$OUT/step_latency.json" ;;
    c2cuda-baselines)
      cp tasks/manifest.json "$OUT/manifest.json"
      timeout "$T" python3 -m kernel_gym.tasks.measure --out "$OUT/manifest.json" \
        --only $(python3 -c "import json; print(' '.join(k for k in json.load(open('tasks/manifest.json'))['tasks'] if k.startswith('c2cuda/')))") ;;
    judge-tests)  # the trusted judge on the GPU: IPC tensors and events, the hang limit, the GPU attack suite
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests/gpu/test_judge_gpu.py tests/gpu/test_confine_gpu.py tests/anti_hacking/test_gpu_attacks.py \
        -p no:cacheprovider -q -rfE -s --durations=10 ;;
    clients)  # 1 vs 8 client processes on the machine's judge: speedup CV, waits, exclusivity
      timeout "$T" python3 benchmarks/bench_clients.py --clients ${CLIENTS:-8 1} --repeats ${REPEATS:-5} --device cuda \
        ${CLIENT_KERNELS:+--kernels $CLIENT_KERNELS} --out "$OUT/clients_$(echo ${CLIENTS:-8 1} | tr " " _)" ;;
    clients-10)  # the same with at least 10 timed rounds (adaptive up to 300): is the CV goal kept at less GPU time?
      timeout "$T" python3 benchmarks/bench_clients.py --clients 8 --repeats ${REPEATS:-3} --device cuda --timing-trials 10 \
        --out "$OUT/min10" ;;
    faults)  # #35: 8 clients, genuine streams with 0/5/20 % faults mixed in (benchmarks/bench_faults.py)
      timeout "$T" python3 benchmarks/bench_faults.py --clients ${CLIENTS:-8} --jobs ${JOBS:-10} --rates ${RATES:-0 0.05 0.2} \
        --device cuda --out "$OUT/faults" ;;
    fault-tests)  # #35/#36: faults and isolation on the GPU
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests/gpu/test_faults_gpu.py tests/gpu/test_confine_gpu.py \
        tests/gpu/test_judge_gpu.py -p no:cacheprovider -q -rfE --durations=10 ;;
    judge-hang)  # #21: submission to `timeout` verdict of a hanging kernel, and the next job on the same slot
      timeout "$T" python3 benchmarks/bench_judge.py hang --repeats ${REPEATS:-3} --out "$OUT" ;;
    judge-noop)
      timeout "$T" python3 benchmarks/bench_judge.py noop --n 300 --out "$OUT" ;;
    probe-stuck)  # #35: what releases a judge stream stuck on a dead runner's work (event: nothing; value: the judge)
      for v in kill abandon; do timeout 60 python3 benchmarks/probe_stuck_wait.py $v; done
      timeout "$T" python3 benchmarks/probe_wait_value.py release; timeout "$T" python3 benchmarks/probe_wait_value.py bias ;;
    probe-memory)  # where the judge's GPU memory goes, job by job (PROBE_MEMORY_ALL=1: also with torch's shared pool
      # for arenas, and with a fresh runner per job)
      timeout $((T * 3 / 5)) python3 benchmarks/probe_judge_memory.py ${PROBE_MEMORY_JOBS:+--jobs $PROBE_MEMORY_JOBS}
      if [ -n "${PROBE_MEMORY_ALL:-}" ]; then
        KERNEL_GYM_PRIVATE_ARENAS=0 timeout $((T / 5)) python3 benchmarks/probe_judge_memory.py --jobs genuine,abort,genuine
        KERNEL_GYM_RUNNER_REUSE=never timeout $((T / 5)) python3 benchmarks/probe_judge_memory.py --jobs genuine,genuine,genuine
      fi ;;
    probe-streams)  # what the profiler reports for the gate's marker kernels and a CuPy side stream
      timeout "$T" python3 benchmarks/probe_streams.py ;;
    probe-placement)  # does a kernel's runtime depend on where its buffers land? (plain do_bench, fresh buffers per trial)
      timeout "$T" python3 benchmarks/probe_placement.py --task ${PROBE_TASK:-level2/conv_relu_pool} \
        --solution tests/solutions/${PROBE_SOLUTION:-level2_conv_relu_pool.py} ;;
    probe-clock)  # where a cross-process GPU clock loses time: plain workloads, no kernel-gym code in the loop
      timeout "$T" python3 benchmarks/probe_clock.py --n ${PROBE_N:-60} --out "$OUT/probe" ;;
    probe-mps)  # the same under MPS (one shared GPU context for every process), when this machine can start it
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
      mkdir -p /tmp/mps_pipe /tmp/mps_log
      if nvidia-cuda-mps-control -d; then
        timeout "$T" python3 benchmarks/probe_clock.py --n ${PROBE_N:-60} --out "$OUT/probe_mps"
        echo quit | nvidia-cuda-mps-control; sleep 2
      else echo "MPS did not start"; fi
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY ;;
    judge-probe)  # agreement with each runner's own event interval beside the judge's reading (diagnostics)
      KERNEL_GYM_RUNNER_PROBE=1 timeout "$T" python3 benchmarks/bench_judge.py agreement --repeats 1 \
        --only level1_relu level1_softmax level1_layernorm level2_gemm_relu --out "$OUT/probe_agreement" ;;
    judge-agreement)  # every genuine Triton solution, do_bench over VALUE_SETS input value sets; KERNEL_GYM_RUNNER_PROBE=1 adds the runners' own readings
      timeout "$T" python3 benchmarks/bench_judge.py agreement --repeats ${VALUE_SETS:-8} --out "$OUT" ;;
    runner-start)  # a runner ready: fresh interpreter vs forked from the fork server, on cuda (and one evaluation each)
      timeout "$T" python3 benchmarks/bench_runner_start.py --device cuda --n ${N_STARTS:-5} --out "$OUT" ;;
    probe-triton-driver)  # what a fresh runner's first Triton call paid before runners built Triton's driver at start
      for i in 1 2 3; do TRITON_CACHE_DIR=$(mktemp -d) timeout "$T" python3 -c "import time, torch
torch.cuda.init(); t = time.perf_counter()
from triton.runtime import driver
driver.active.utils; driver.active.get_current_target()
print('triton driver built and loaded in a fresh cache: %.3f s' % (time.perf_counter() - t))"; done ;;
    probe-stall)  # #35: does a spin, a trap or an illegal access in one process stall another's GPU work? (which
      # timeouts beside them need a confirmation: judge/stalls.py)
      timeout "$T" python3 benchmarks/probe_stall.py --out "$OUT/probe_stall.json" ;;
    compare-cost)  # #36: a timed round's output check on a 512 MiB output: time, aten ops and memory per chunk size
      timeout "$T" python3 benchmarks/compare_cost.py --elements 134217728 16777216 --chunks 22 23 24 \
        --out "$OUT/compare_cost.json" ;;
    probe-threads)  # which import of a runner's preload starts a thread (the fork server refuses to fork then)
      for nvml in "" 1; do OMP_NUM_THREADS=1 PYTORCH_NVML_BASED_CUDA_CHECK=$nvml timeout "$T" python3 benchmarks/probe_threads.py; done
      OMP_NUM_THREADS=1 timeout "$T" python3 benchmarks/probe_threads.py --fork-safe ;;  # the fork server's preload
    confine-proc)  # landlock_proc on cuda runners (no reading other processes' /proc): CUDA, Triton's ptxas, the attacks
      KERNEL_GYM_CONFINE_PROC=1 timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests/gpu/test_judge_gpu.py \
        tests/anti_hacking/test_gpu_attacks.py tests/gpu/test_gpu_env.py -p no:cacheprovider -q -rfE ;;
    uid-tests)  # runners under a uid of their own on the GPU (closes /proc/<pid>/environ; docs/anti-hacking.md)
      KERNEL_GYM_RUNNER_UID=auto timeout -s INT -k 30 "$T" python3 -m pytest -m "gpu or not gpu" tests/gpu/test_judge_gpu.py \
        tests/sandbox/test_environ_secrets.py -p no:cacheprovider -q -rfExX ;;
    forkserver-cuda)  # the judge's GPU tests with cuda runners forked from the fork server (judge/spawner.py)
      KERNEL_GYM_FORKSERVER=1 timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests/gpu/test_judge_gpu.py -p no:cacheprovider -q -rfE ;;
    gpu-shapes)  # #22: the CUDA forms of the regression set and the profiler share on the device
      timeout -s INT -k 30 "$T" python3 -m pytest -m gpu tests/anti_hacking/test_gpu_shapes.py -p no:cacheprovider -q -rfE ;;
    throughput-triton-old|throughput-cuda-old)  # the same benchmark from main 9cb1555 (.whl/old_main.tar), same machine;
      # OLD_STOCK_SAMPLE=0 skips its stock-harness sample (the new stage measures the stock harness once)
      kind=${stage#throughput-}; kind=${kind%-old}
      rm -rf /tmp/old && mkdir -p /tmp/old && tar -xf .whl/old_main.tar -C /tmp/old
      (cd /tmp/old && PYTHONPATH=/tmp/site:/tmp/old timeout "$T" python3 benchmarks/bench_speed.py throughput \
        --kind "$kind" --n ${N_ACTIONS:-32} --stock-sample ${OLD_STOCK_SAMPLE:-1} --workers 8 --out "$OUT/old_$kind") ;;
    throughput-triton-new|throughput-cuda-new|throughput-cuda-nospare)  # nospare: no build process started ahead
      kind=${stage#throughput-}; kind=${kind%-*}
      spares=${KERNEL_GYM_SPARE_BUILDERS:-8}; [ "$stage" = throughput-cuda-nospare ] && spares=0  # (NEW_STOCK_SAMPLE=0 to skip the stock run)
      judges=$(mktemp -d /tmp/kgj_XXXX)  # a judge of its own, started with this stage's settings, stopped after
      KERNEL_GYM_JUDGE_DIR=$judges KERNEL_GYM_SPARE_BUILDERS=$spares timeout "$T" python3 benchmarks/bench_speed.py \
        throughput --kind "$kind" --n ${N_ACTIONS:-32} --stock-sample ${NEW_STOCK_SAMPLE:-1} --workers 8 \
        --out "$OUT/${stage#throughput-}"
      python3 -c "import pathlib, sys; from kernel_gym.judge.client import stop_judge
for s in pathlib.Path(sys.argv[1]).glob('*.sock'): stop_judge(s)" "$judges" ;;
    *) echo "unknown stage $stage"; false ;;
  esac; } 2>&1 | tee -a "$OUT/session.log"  # one log: the device tool brings back at most 8 files
  echo "=== $stage rc=$? $(date -u +%T)" | tee -a "$OUT/session.log"
done
