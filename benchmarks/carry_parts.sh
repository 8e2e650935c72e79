#!/usr/bin/env bash
# Wheels too big for one device call (64 MiB with the working tree, ~5.5 MiB) carried in parts, one part a call.
#
#   bash benchmarks/carry_parts.sh split [PART_MIB]    # here (network): download, cut into .whl_parts/<n>/ (default 56)
#   bash benchmarks/carry_parts.sh join [PART_DIR...]  # on the device: add the carried parts, install what is whole
#   bash benchmarks/carry_parts.sh status              # on the device: which wheels are whole, which wait for parts
#
# split: downloads, for the device's CPython 3.12 on x86-64 (manylinux), the wheels it lacks in three groups, pinned
# as pyproject.toml pins them: 1-base (what prepare_wheels.sh fetches: gymnasium and its two dependencies, the
# nvidia-cutlass C++ headers, helion and its imports; helion at DEVICE_HELION below, not pyproject's pin, for the
# device's torch 2.11), 2-cute_dsl (nvidia-cutlass-dsl and its libs-base, libs-core, libs-cu12: 92 MB alone),
# 3-tilelang (tilelang, z3-solver, apache-tvm-ffi, torch-c-dlpack-ext, at the versions verified here) into
# .whl_parts/download/, then cuts their bytes, in that order, into .whl_parts/1/, 2/, ... of at most
# PART_MIB each. Every part holds SHA256SUMS (per wheel: sha256, size, pieces, group) and prints, and PLAN.txt says,
# which groups each part completes. About 184 MB in all: 4 parts of 56 MiB (base whole in part 1, cute_dsl in part 2,
# tilelang in part 4).
# join: copies each carried part's pieces into /tmp/parts/pieces (a piece already there is kept: a part carried twice
# does no harm), joins every wheel whose pieces are all there into /tmp/parts/<wheel>, checks its sha256, and installs
# each group once all its wheels are whole, in one pip call (`--target /tmp/site`: the cute_dsl wheels share the folder
# nvidia_cutlass_dsl/, which separate --target installs would replace one another's). device_session.sh runs it first.
# The DSL's import path: nvidia-cutlass-dsl's .pth (dsl_packages on sys.path) is not read from a --target folder, so
# device_session.sh puts /tmp/site/nvidia_cutlass_dsl/dsl_packages on PYTHONPATH.
#
# Calls (docs/backends.md, "Device note"; device_session.sh's plan): call k carries [".whl_parts/k"] and nothing else
# (1: base whole, 2: cute_dsl whole, 3: -, 4: tilelang whole), back to back on the same warm machine (it stays warm
# ~30 s after a call; /tmp and ignored paths survive only while it is held). A call whose log says "parts: base waits"
# landed on a fresh machine: start again at part 1.
set -euo pipefail
cd "$(dirname "$0")/.."
PARTS=.whl_parts
T=${CARRY_TMP:-/tmp/parts} SITE=${CARRY_SITE:-/tmp/site}  # (other folders: for a rehearsal off the device)
# Helion for the device, not pyproject.toml's pin (helion==1.5.1, verified here on torch 2.14.1): the device has
# torch 2.11.0+cu130 / triton 3.6.0, and helion 1.5.1 fails to import there (helion/autotuner/logger.py imports
# IntelGPUError from torch._inductor.runtime.triton_compat, which torch 2.11 lacks). 1.5.0 is the newest release that
# imports and compiles on torch 2.11.0 + triton 3.6.0 (CPython 3.12: tests/helion passed under TRITON_INTERPRET=1).
DEVICE_HELION=${DEVICE_HELION:-helion==1.5.0}
mode=${1:-}
[ $# -gt 0 ] && shift

download() {  # group folder, requirements...
  local dir=$PARTS/download/$1; shift
  mkdir -p "$dir"
  "${PYTHON:-python3}" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 \
    --platform manylinux2010_x86_64 -d "$dir" "$@"
}

split_parts() {
  local part_mib=${1:-56}
  read -r cute tilelang cutlass < <(python3 -c "import tomllib
d = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']
print(d['cute_dsl'][0], d['tilelang'][0], d['cutlass'][0])")
  rm -rf "$PARTS"
  download 1-base gymnasium farama_notifications cloudpickle "$cutlass" "$DEVICE_HELION" filecheck rich markdown-it-py \
    mdurl pygments psutil
  local v=${cute#*==}
  download 2-cute_dsl "$cute" "nvidia-cutlass-dsl-libs-base==$v" "nvidia-cutlass-dsl-libs-core==$v" \
    "nvidia-cutlass-dsl-libs-cu12==$v"
  download 3-tilelang "$tilelang" "z3-solver==4.15.4.0" "apache-tvm-ffi==0.1.12" "torch-c-dlpack-ext==0.1.5"
  python3 - "$PARTS" "$part_mib" <<'EOF'
import hashlib, pathlib, sys
root, budget = pathlib.Path(sys.argv[1]), int(float(sys.argv[2]) * 2**20)
wheels = [(g.name.split("-", 1)[1], w) for g in sorted((root / "download").iterdir()) for w in sorted(g.glob("*.whl"))]
part, room, sums, plan = 1, budget, [], {}
for group, wheel in wheels:
    data = wheel.read_bytes()
    cuts, offset = [], 0
    while offset < len(data):
        if room == 0:
            part, room = part + 1, budget
        n = min(room, len(data) - offset)
        cuts.append((part, offset, n))
        offset, room = offset + n, room - n
    for k, (p, start, n) in enumerate(cuts, 1):
        folder = root / str(p)
        folder.mkdir(exist_ok=True)
        (folder / f"{wheel.name}.{k}-of-{len(cuts)}").write_bytes(data[start:start + n])
    sums.append(f"{hashlib.sha256(data).hexdigest()} {len(data)} {len(cuts)} {group} {wheel.name}")
    plan[group] = cuts[-1][0]  # the part that completes the group (its wheels come in order)
for folder in sorted(p for p in root.iterdir() if p.name.isdigit()):
    (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
lines = []
for folder in sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
    size = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
    done = [g for g, p in plan.items() if p == int(folder.name)]
    lines.append(f"part {folder.name}: {size:5.1f} MiB, completes: {', '.join(done) or '-'}")
(root / "PLAN.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
  local tree
  tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 du -cb 2>/dev/null | awk 'END {print $1}')
  echo "working tree that travels with each part: $((tree / 1048576)) MiB (a call carries at most 64 MiB in all)"
}

joined() {  # prints "group wheel" for each whole, checked wheel; joins what it can
  local sums="$T/SHA256SUMS" sha size pieces group name k
  while read -r sha size pieces group name; do
    if [ ! -f "$T/$name" ]; then
      local have
      have=$(find "$T/pieces" -name "$name.*-of-$pieces" | wc -l)
      if [ "$have" -lt "$pieces" ]; then
        [ "$have" -eq 0 ] || echo "parts: $group $name: $have of $pieces pieces" >&2
        continue
      fi
      for k in $(seq 1 "$pieces"); do cat "$T/pieces/$name.$k-of-$pieces"; done > "$T/$name.tmp"
      if ! echo "$sha  $T/$name.tmp" | sha256sum -c --quiet -; then
        echo "parts: $name: sha256 mismatch, pieces dropped: carry its parts again" >&2
        rm -f "$T/$name.tmp" "$T/pieces/$name".*; continue
      fi
      mv "$T/$name.tmp" "$T/$name"
      rm -f "$T/pieces/$name".*  # (disk: the joined wheel replaces its pieces)
    fi
    echo "$group $name"
  done < "$sums"
}

join_parts() {
  mkdir -p "$T/pieces" "$SITE"
  local dirs=("$@") d
  [ ${#dirs[@]} -eq 0 ] && mapfile -t dirs < <(find "$PARTS" -mindepth 1 -maxdepth 1 -name '[0-9]*' -type d 2>/dev/null | sort -V)
  for d in "${dirs[@]}"; do
    [ -f "$d/SHA256SUMS" ] || continue
    cp "$d/SHA256SUMS" "$T/SHA256SUMS"
    for f in "$d"/*-of-*; do
      local base=${f##*/}
      [ -e "$f" ] || continue
      [ -f "$T/${base%.*-of-*}" ] || [ -f "$T/pieces/$base" ] || cp "$f" "$T/pieces/"
    done
    echo "parts: $d added"
  done
  [ -f "$T/SHA256SUMS" ] || { echo "parts: none carried"; return 0; }
  local whole group
  whole=$(joined)
  for group in $(awk '{print $4}' "$T/SHA256SUMS" | sort -u); do
    [ -f "$T/$group.installed" ] && { echo "parts: $group installed"; continue; }
    local want have
    want=$(awk -v g="$group" '$4 == g' "$T/SHA256SUMS" | wc -l)
    have=$(echo "$whole" | awk -v g="$group" '$1 == g' | wc -l)
    if [ "$have" -lt "$want" ]; then echo "parts: $group waits ($have of $want wheels whole)"; continue; fi
    # shellcheck disable=SC2046
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      $(echo "$whole" | awk -v g="$group" -v t="$T" '$1 == g {print t "/" $2}') && touch "$T/$group.installed" \
      && echo "parts: $group installed now"
  done
}

case $mode in
  split) split_parts "$@" ;;
  join) join_parts "$@" ;;
  status) [ -f "$T/SHA256SUMS" ] && joined >/dev/null; ls "$T"/*.installed 2>/dev/null || true ;;
  *) sed -n 2,27p "$0"; exit 2 ;;
esac
