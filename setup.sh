#!/usr/bin/env bash
# Idempotent set-up for CAKE on Debian 12 (root or sudo; only the package registries needed):
#   1. Bazel: Debian's bazel-bootstrap 4.2.3 (+ rules_java, skylib), the Bazel that works offline;
#   2. .venv: CPython 3.11 with the pinned requirements.txt (re-installed only when it changes);
#   3. buf (npm @bufbuild/buf) into .tools/, for buf lint of proto/;
#   4. CUDA: checks nvcc 13 and ptxas are present (needed to compile kernels; no GPU needed).
# Anything missing is named with the command that fixes it; the script stops on the first failure.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
BUF_VERSION=1.75.0

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else die "need root (or sudo) to run: $*"; fi
}

# 1. Bazel 4.2.3 from Debian.
if ! command -v bazel >/dev/null || [ ! -d /usr/share/bazel/rules/java ] || [ ! -d /usr/share/bazel/tools/skylib ]; then
  command -v apt-get >/dev/null || die "apt-get not found: CAKE's build needs Debian 12's bazel-bootstrap package"
  say "installing Bazel (Debian bazel-bootstrap 4.2.3)"
  as_root apt-get install -y -q bazel-bootstrap bazel-rules-java bazel-skylib >/dev/null 2>&1 || {
    as_root apt-get update -q >/dev/null
    as_root apt-get install -y -q bazel-bootstrap bazel-rules-java bazel-skylib >/dev/null
  } || die "could not install bazel-bootstrap bazel-rules-java bazel-skylib with apt-get"
fi
say "bazel: $(command -v bazel)"

# 1b. The OpenMP runtime LightGBM's wheel links (the agent's learned ranker); gcc brings it, a bare system may not.
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libgomp\.so\.1'; then
  say "installing libgomp1 (OpenMP runtime for lightgbm)"
  as_root apt-get install -y -q libgomp1 >/dev/null 2>&1 || {
    as_root apt-get update -q >/dev/null
    as_root apt-get install -y -q libgomp1 >/dev/null
  } || die "could not install libgomp1 with apt-get"
fi

# 2. Python 3.11 virtual environment with the pinned requirements.
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' 2>/dev/null \
  || die "CPython 3.11 is required (found: $("$PY" --version 2>&1)); install python3.11 or set PYTHON"
if [ ! -x .venv/bin/python3 ]; then
  say "creating .venv"
  "$PY" -m venv .venv || die "python3 -m venv failed: install the venv module (apt-get install python3.11-venv)"
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing requirements.txt into .venv"
  .venv/bin/python3 -m pip install -q --disable-pip-version-check -r requirements.txt \
    || die "pip install -r requirements.txt failed (see above)"
  echo "$want" > "$stamp"
fi
say "python: $(.venv/bin/python3 --version) with $(wc -l < <(.venv/bin/python3 -m pip freeze)) packages"

# 3. buf, for buf lint of the protobuf contract.
if [ ! -x .tools/node_modules/@bufbuild/buf-linux-x64/bin/buf ] && [ ! -x .tools/node_modules/@bufbuild/buf-linux-aarch64/bin/buf ]; then
  command -v npm >/dev/null || die "npm not found: install Node.js (apt-get install npm) to get buf"
  say "installing buf $BUF_VERSION (npm @bufbuild/buf) into .tools/"
  mkdir -p .tools
  npm install -s --prefix .tools --no-audit --no-fund "@bufbuild/buf@$BUF_VERSION" >/dev/null \
    || die "npm install @bufbuild/buf@$BUF_VERSION failed"
fi

# 4. CUDA toolkit (compile only: no GPU is needed to build or test).
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing=()
[ -x "$CUDA_HOME/bin/nvcc" ] || missing+=("nvcc ($CUDA_HOME/bin/nvcc)")
[ -x "$CUDA_HOME/bin/ptxas" ] || missing+=("ptxas ($CUDA_HOME/bin/ptxas)")
if [ ${#missing[@]} -gt 0 ]; then
  die "missing from the CUDA toolkit: ${missing[*]}. Install CUDA 13.0 (nvcc, ptxas) or set CUDA_HOME."
fi
nvcc_version=$("$CUDA_HOME/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
case "$nvcc_version" in
  13.*) ;;
  *) die "nvcc $nvcc_version found at $CUDA_HOME/bin/nvcc; CAKE needs CUDA 13 (sm_100a, sm_90a, sm_80 targets)" ;;
esac
say "nvcc: $nvcc_version at $CUDA_HOME/bin/nvcc"

# Bazel caches its view of the venv and host tools; refresh it when they changed.
tools_stamp=.tools/.stamp
tools_now="$want $(ls .tools/node_modules/@bufbuild 2>/dev/null | tr '\n' ' ') $CUDA_HOME"
if [ "$(cat "$tools_stamp" 2>/dev/null)" != "$tools_now" ]; then
  bazel sync --only=cake_python --only=cake_tools >/dev/null 2>&1 || true
  echo "$tools_now" > "$tools_stamp"
fi
say "ready"
