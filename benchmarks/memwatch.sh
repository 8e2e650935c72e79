#!/usr/bin/env bash
# GPU memory per process every ${MEMWATCH_S:-2} s, with each process's command line (judge, runner role, client):
#   bash benchmarks/memwatch.sh OUTFILE &   ...   kill %1
# Used by device_session.sh when MEMWATCH=1, to see who holds the GPU's memory while several clients share a judge.
out=$1
while true; do
  echo "--- $(date -u +%T.%N | cut -c1-12) $(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader)" >> "$out"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null | while IFS=', ' read -r pid mib; do
    cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-160)
    echo "$pid $mib $cmd" >> "$out"
  done
  sleep "${MEMWATCH_S:-2}"
done
