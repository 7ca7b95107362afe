#!/usr/bin/env bash
# Run CAKE's GPU tests and benchmarks with plain pytest on a machine with a GPU and no
# Bazel or registries (the lent H200). From the repo root:
#
#   ci/gpu_run.sh [pytest args...]        results under $OUT (default: ./gpu-results)
#
# Carried in from the build machine (see ci/README.md): .whl/ (wheels the GPU image
# lacks, e.g. the protobuf runtime the generated code needs) and .gen/ (generated
# protobuf code, from `python3 proto/generate.py`).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(pwd)/gpu-results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REQUIRE_GPU=1

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "ci/gpu_run.sh: installing carried wheels failed" >&2; exit 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

python3 - <<'PY' | tee "$OUT/machine.txt"
import platform, subprocess, torch
print("gpu:", torch.cuda.get_device_name(0), "capability", torch.cuda.get_device_capability(0))
print("torch:", torch.__version__, "cuda:", torch.version.cuda, "python:", platform.python_version())
try:
    import google.protobuf as pb; print("protobuf:", pb.__version__)
except Exception as e:
    print("protobuf: missing", e)
print(subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm", "--format=csv"],
                     capture_output=True, text=True).stdout.strip())
PY

python3 -m pytest -m "gpu or sm_90a" -rA --junitxml="$OUT/gpu-tests.xml" "$@" 2>&1 | tee "$OUT/gpu-tests.log"
status=${PIPESTATUS[0]}
echo "ci/gpu_run.sh: pytest exit status $status"
exit "$status"
