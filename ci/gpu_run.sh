#!/usr/bin/env bash
# Run CAKE's GPU tests and benchmarks with plain pytest on a machine with a GPU and no
# Bazel or registries (the lent H200). From the repo root:
#
#   ci/gpu_run.sh [pytest args...]        results under $OUT (default: ./gpu-results)
#   CAKE_BENCH=1 ci/gpu_run.sh             also run the benchmarks (JSON under $OUT)
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

# The GPU tests live beside the runtime and the kernels; other folders hold CPU-only tests.
[ $# -gt 0 ] || set -- runtime kernels
python3 -m pytest -p no:cacheprovider -m "gpu or sm_90a" -rA --junitxml="$OUT/gpu-tests.xml" "$@" 2>&1 | tee "$OUT/gpu-tests.log" | grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed"
status=${PIPESTATUS[0]}
echo "ci/gpu_run.sh: pytest exit status $status"

if [ "${CAKE_BENCH:-0}" = 1 ]; then
  timeout 300 python3 -m kernels.gemm.bench --out "$OUT/gemm_h200.json" || status=1
  timeout 900 python3 -m kernels.kmeans.bench --shapes paper,large,sweep --impls cake,flashlib,flash-kmeans \
    --lloyd --reps 20 --timeout 400 --out "$OUT/kmeans_h200.json" || status=1
fi
exit "$status"
