#!/usr/bin/env bash
# A second environment, .venv-skyrl, for SkyRL's own rollout code: skyrl 0.4.0 needs Python >= 3.12, which .venv may
# not have (Debian bookworm's is 3.11). tests/integrations/test_skyrl_loop.py plays a whole KernelRefine episode
# through `SkyRLGymGenerator.generate` in it (scripts/skyrl_episode.py), its evaluation served from .venv.
#
#   bash scripts/skyrl_python.sh            # after scripts/install.sh (or: KERNEL_GYM_SKYRL=1 bash scripts/install.sh)
#   bash scripts/skyrl_python.sh --interpreter   # only find or build the interpreter (install.sh: beside its pip runs)
#
# The interpreter: $SKYRL_PYTHON if set; else one built here before (.skyrl/python); else the first python3.13,
# python3.12 or python3.14 on PATH that runs with ssl and venv; else CPython 3.13.5 built from source into
# .skyrl/python: Debian trixie's tarball of it from deb.debian.org, pinned by sha256 (as root, the build's missing
# Debian packages are apt-get installed first). The build is trimmed for time, each choice measured on 2 cores:
# no test modules, -O1 and no debug information (-O3 -g: 112 s of make, -O1: 42 s; the episode and pip run as fast;
# -O0 saves 15 s more but doubles the episode's CPU), no PGO/LTO, a plain `make install` (its byte-compiling of the
# standard library takes ~5 s); ~70 s in all on 2 idle cores (configure 25 s), where a default configure + make +
# make install took 296 s. (On 2 cores shared with other work this build took ~200 s.)
# The packages: skyrl and torch without their dependencies (torch at .venv's version, with .venv's NVIDIA libraries
# linked in: they don't depend on the Python version, and are 3 GB), then the packages the generator's modules
# import, all byte-compiled (~1 minute, 600 MB of downloads). Triton is left out: the episode's evaluation runs in
# .venv, over HTTP. Running it again does nothing once .venv-skyrl holds these pins.
set -euo pipefail
shopt -s inherit_errexit  # a failing step inside $(find_python), the build, stops the script too
cd "$(dirname "$0")/.."

SKYRL_VERSION=0.4.0  # scripts/skyrl_episode.py builds SkyRLGymGenerator's configs the way this version does
SKYRL_GYM_VERSION=0.4.0
TRANSFORMERS_VERSION=5.16.1  # skyrl 0.4.0 requires transformers<=5.16.1
PY_VERSION=3.13.5
PY_TARBALL=python3.13_${PY_VERSION}.orig.tar.xz
# deb.debian.org keeps the versions of Debian's current releases only: when trixie moves to a newer 3.13, update
# these three lines (the sha256 of the new tarball, computed on the downloaded file; Debian's Sources list it too)
PY_URL=http://deb.debian.org/debian/pool/main/p/python3.13/${PY_TARBALL}
PY_SHA256=93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640
PY_BUILD_DEBS="build-essential libssl-dev zlib1g-dev libffi-dev libsqlite3-dev liblzma-dev libbz2-dev xz-utils curl"
PREFIX=$PWD/.skyrl/python
VENV=.venv-skyrl
start=$SECONDS

usable() {  # a Python SkyRL accepts (>=3.12, <3.15) that can make a venv with pip and fetch over HTTPS
  "$1" -c 'import sys, ssl, ensurepip, venv; sys.exit(not (3, 12) <= sys.version_info[:2] < (3, 15))' >/dev/null 2>&1
}

apt_install_missing() {
  command -v dpkg-query >/dev/null || return 0
  local missing="" pkg
  for pkg in $PY_BUILD_DEBS; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing="$missing $pkg"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "skyrl_python: apt-get install$missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "skyrl_python: warning: missing Debian packages (not root, so not installed):$missing" >&2
  fi
}

build_python() {
  local t=$SECONDS build=.skyrl/build
  apt_install_missing
  echo "skyrl_python: building CPython ${PY_VERSION} into .skyrl/python ($(nproc) cores)"
  rm -rf "$build" "$PREFIX" && mkdir -p "$build"
  curl -fsSL -o ".skyrl/${PY_TARBALL}" "$PY_URL"
  echo "${PY_SHA256}  .skyrl/${PY_TARBALL}" | sha256sum -c --quiet -
  tar -xf ".skyrl/${PY_TARBALL}" -C "$build" --strip-components=1
  local t_fetch=$((SECONDS - t))
  (cd "$build" && OPT="-DNDEBUG -g0 -O1" ./configure -q --prefix="$PREFIX" --disable-test-modules \
    --with-ensurepip=no >/dev/null)
  local t_configure=$((SECONDS - t - t_fetch))
  make -C "$build" -s -j"$(nproc)" >"$build.log" 2>&1 || { tail -40 "$build.log"; exit 1; }
  local t_make=$((SECONDS - t - t_fetch - t_configure))
  make -C "$build" -s install >>"$build.log" 2>&1 || { tail -40 "$build.log"; exit 1; }
  # the modules pip, torch, pandas and the generator need: a missing -dev package drops one silently at configure
  "$PREFIX/bin/python3" -c "import ssl, zlib, ctypes, lzma, bz2, sqlite3, ensurepip"
  rm -rf "$build" "$build.log" ".skyrl/${PY_TARBALL}"
  echo "skyrl_python: built in $((SECONDS - t)) s (download ${t_fetch} s, configure ${t_configure} s," \
    "make ${t_make} s, install $((SECONDS - t - t_fetch - t_configure - t_make)) s)"
}

find_python() {
  local candidate
  for candidate in ${SKYRL_PYTHON:-} "$PREFIX/bin/python3" python3.13 python3.12 python3.14; do
    if usable "$candidate"; then command -v "$candidate"; return; fi
  done
  [ -z "${SKYRL_PYTHON:-}" ] || { echo "skyrl_python: SKYRL_PYTHON=$SKYRL_PYTHON is not Python >= 3.12" >&2; exit 1; }
  build_python >&2
  echo "$PREFIX/bin/python3"
}

if [ "${1:-}" = --interpreter ]; then  # the interpreter only (scripts/install.sh builds it while pip installs .venv)
  find_python >/dev/null
  exit 0
fi
[ -x .venv/bin/python ] || { echo "skyrl_python: run bash scripts/install.sh first (torch's version comes from .venv)" >&2
  exit 1; }
TORCH_VERSION=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('torch').split('+')[0])")
NVIDIA=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/nvidia
PINS="skyrl==${SKYRL_VERSION} skyrl-gym==${SKYRL_GYM_VERSION} transformers==${TRANSFORMERS_VERSION} torch==${TORCH_VERSION}"
if [ -f "$VENV/kernel-gym-pins" ] && [ "$(cat "$VENV/kernel-gym-pins")" = "$PINS" ] && usable "$VENV/bin/python"; then
  echo "skyrl_python: $VENV is up to date ($PINS)"
  exit 0
fi

PYTHON=$(find_python)
t=$SECONDS
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if [ -d "$NVIDIA" ]; then  # torch's CUDA build loads these at import, GPU or not
  "$VENV/bin/python" -m pip install -q --no-deps "skyrl==${SKYRL_VERSION}" "torch==${TORCH_VERSION}"
  ln -s "$NVIDIA" "$SITE/nvidia"
else  # .venv's torch came without them (a CPU build): this one brings its own
  "$VENV/bin/python" -m pip install -q --no-deps "skyrl==${SKYRL_VERSION}"
  "$VENV/bin/python" -m pip install -q "torch==${TORCH_VERSION}"
fi
# (--no-warn-conflicts: skyrl's other requirements are left out on purpose; these are what its generator imports)
"$VENV/bin/python" -m pip install -q --no-warn-conflicts "skyrl-gym==${SKYRL_GYM_VERSION}" \
  "transformers==${TRANSFORMERS_VERSION}" gymnasium jinja2 numpy loguru tqdm cloudpathlib pydantic pandas aiohttp \
  orjson pybase64 rich omegaconf requests pyyaml setuptools filelock typing_extensions sympy networkx fsspec
echo "$PINS" >"$VENV/kernel-gym-pins"
echo "skyrl_python: $VENV ($("$VENV/bin/python" --version), $PINS) installed in $((SECONDS - t)) s;" \
  "$((SECONDS - start)) s in all"
