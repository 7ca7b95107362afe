#!/usr/bin/env bash
# CAKE on a machine with a GPU and no Bazel or registries (the lent H200), from the repo root:
#
#   ci/gpu_run.sh                                  every step below; results under $OUT (default ./gpu-results)
#   CAKE_GPU_STEPS=service,tests,agent ci/gpu_run.sh   some of them, in this order
#   CAKE_GPU_STEPS=tests ci/gpu_run.sh runtime/loader_gpu_test.py   pytest arguments replace the default paths
#
# Steps (each fails the run when it fails; the others still run):
#   service  `python3 -m compiler.service.main --port 0` starts, answers ListTargets and ListPrimitives,
#            and exits 0 on SIGTERM;
#   tests    the GPU-tagged tests with plain pytest (REQUIRE_GPU=1: no GPU is a failure, not a skip);
#   bench    kernels/gemm, kernels/kmeans and kernels/knn benchmarks beside their peers (JSON in the results layout);
#   agent    docs/agent.md's GPU command: `agent.evolve --task TASK --gpu on --compiler grpc` for
#            CAKE_AGENT_SECONDS (default 180) seconds of search, over a real local gRPC compiler server;
#            TASK is CAKE_AGENT_TASK (default kmeans-assign-paper; agent/tasks/ lists the others).
#
# What it writes in $OUT (at most 8 files, none in a folder: the lent machine returns no more), named so
# that they can be committed under benchmarks/results/ as they are (ci/README.md); STEPS below is the
# steps run, joined by "_" (gpu_run_service_tests_agent_h200.log), and the agent's task where it is not the
# default (gpu_run_agent_knn_search_h200.log):
#   gpu_run_STEPS_h200.log            everything every step printed, with each step's verdict
#   gpu_run_STEPS_h200.json           the machine, the commit, each step's status and seconds
#   gemm_h200.json, kmeans_h200.json, kmeans_dispatch_h200.json, knn_h200.json   the benchmarks
#   agent_TASK_h200.md, .json, _best_so_far.png, _best.cake, _best.cu   the agent's report, summary, plot and
#                                     best kernel with its lineage (TASK with underscores: agent_kmeans_assign_paper_h200.md)
#   gpu_run_STEPS_h200_files.tar.gz   the rest: the agent's run directory (database, event logs) and the learned
#                                     knowledge store it wrote (knowledge/: promote it with agent.promote), the
#                                     tests' JUnit XML, the service check's server log
#
# CAKE_COMMIT names the commit in the record where the copy has no .git (the lent machine's copy).
#
# Carried in from the build machine (ci/README.md): .whl/ (wheels the GPU image lacks: the protobuf and
# gRPC runtimes the generated code and the service need) and .gen/ (generated protobuf code, from
# `python3 proto/generate.py`, which also writes the descriptor set ListPrimitives reads).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-results}
PY=${PYTHON:-python3}
STEPS=${CAKE_GPU_STEPS:-service,tests,bench,agent}
AGENT_SECONDS=${CAKE_AGENT_SECONDS:-180}
AGENT_TASK=${CAKE_AGENT_TASK:-kmeans-assign-paper}
WORK=${CAKE_GPU_WORK:-$(mktemp -d /tmp/cake-gpu-run.XXXXXX)}
mkdir -p "$OUT" "$WORK/files"
NAME=gpu_run_${STEPS//,/_}
# Another agent task than the default names itself: runs of two tasks keep apart (gpu_run_agent_knn_search_h200.log).
case ",$STEPS," in *,agent,*) [ "$AGENT_TASK" = kmeans-assign-paper ] || NAME=${NAME}_${AGENT_TASK//-/_} ;; esac
NAME=${NAME}_h200
LOG=$OUT/$NAME.log
: > "$LOG"
export PYTHONUNBUFFERED=1 REQUIRE_GPU=1
# Nothing the machine already holds may hide a failure: a fresh compile cache and runs root for this run.
export CAKE_CACHE_DIR=$WORK/cache CAKE_RUNS_ROOT=$WORK/runs

say() { printf '[gpu_run] %s\n' "$*" | tee -a "$LOG"; }

if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl \
    >>"$LOG" 2>&1 || { say "installing the carried wheels failed (see above)"; exit 1; }
  export PYTHONPATH=$WORK/site:$ROOT/.gen:$ROOT${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$ROOT/.gen:$ROOT${PYTHONPATH:+:$PYTHONPATH}
fi
[ -f .gen/cake/ir/v1/ir_pb2.py ] || say "warning: no .gen/ (run python3 proto/generate.py on the build machine and carry it)"

status=0
results=()  # "name status seconds"

step_service() {
  "$PY" - "$WORK/files/service.log" <<'PY'
import signal, sys
from compiler.service.client import CompilerClient
from compiler.service.local import LocalServer
server = LocalServer(port=0)
server.start()
try:
    with CompilerClient(server.address, timeout=30) as client:
        targets = [t.name for t in client.list_targets().targets]
        primitives = client.list_primitives().primitives
        documented = sum(1 for p in primitives if p.doc)
    print("service: serving on %s; targets %s; %d primitives, %d with ir.proto's comment"
          % (server.address, ", ".join(targets), len(primitives), documented))
    assert primitives and documented == len(primitives), "ListPrimitives lacks ir.proto's comments"
finally:
    code = server.stop()
    open(sys.argv[1], "w").write(server.log())
print("service: SIGTERM -> exit %d" % code)
sys.exit(code)
PY
}

step_tests() {
  local paths=("$@")
  # The runtime's and the kernels' GPU tests, the installed wheel's (python/: the wheel in dist/, docs/package.md)
  # and the Measure RPC's.
  [ ${#paths[@]} -gt 0 ] || paths=(runtime kernels python compiler/service/measure_gpu_test.py)
  "$PY" -m pytest -p no:cacheprovider -m "gpu or sm_90a" -rA --junitxml="$WORK/files/gpu_tests.xml" "${paths[@]}"
}

step_bench() {
  local rc=0
  timeout 300 "$PY" -m kernels.gemm.bench --out "$OUT/gemm_h200.json" || rc=1
  timeout 900 "$PY" -m kernels.kmeans.bench --shapes paper,large,sweep --impls cake,flashlib,flash-kmeans \
    --lloyd --reps 20 --timeout 400 --out "$OUT/kmeans_h200.json" || rc=1
  # The KMeans dispatcher: tune, then validate beside flashlib on untuned shapes (its logs go in the tarball).
  # Without a carried prebuilt store ($CAKE_PREBUILT; bazel build //kernels/kmeans:assign_prebuilt) it compiles ~120 kernels first.
  timeout 600 "$PY" -m kernels.kmeans.bench_dispatch --out-dir "$WORK/files/kmeans_dispatch" --deadline-s 540 --tune-s 120 \
    && cp "$WORK/files/kmeans_dispatch/kmeans_dispatch_h200.json" "$OUT/" || rc=1
  # KNN beside flashlib's flash_knn and torch mm + topk (kernels/knn/bench.py).
  timeout 1500 "$PY" -m kernels.knn.bench --timeout 700 --out "$OUT/knn_h200.json" || rc=1
  return $rc
}

step_agent() {
  local run=$WORK/runs/h200-${AGENT_TASK} stem=agent_${AGENT_TASK//-/_}_h200 rc f
  # docs/agent.md's GPU command, with this run's budget and run directory.
  timeout $((AGENT_SECONDS + 300)) "$PY" -m agent.evolve --task "$AGENT_TASK" --gpu on --compiler grpc \
    --seconds "$AGENT_SECONDS" --run-dir "$run" --plain
  rc=$?
  # A run that measured nothing (a seed that fails its check, say) exits 0 with no best: that is no pass.
  if [ $rc -eq 0 ] && ! "$PY" - "$run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
best = s.get("best") or {}
if best.get("median_ms") is None:
    sys.exit("agent: the run measured no candidate (%s evaluations; report.md lists the failures by class)"
             % s.get("evaluations"))
print("agent: best %.4f ms after %d evaluations (seed %s ms)" % (best["median_ms"], s["evaluations"],
      (s.get("seed") or {}).get("median_ms")))
PY
  then rc=1; fi
  if [ -f "$run/report.md" ]; then
    cp "$run/report.md" "$OUT/$stem.md"
    cp "$run/summary.json" "$OUT/$stem.json"
    for f in best_so_far.png; do [ -f "$run/$f" ] && cp "$run/$f" "$OUT/${stem}_$f"; done
    for f in best.cake best.cu; do [ -f "$run/$f" ] && cp "$run/$f" "$OUT/${stem}_$f"; done
    sed -i "s/](best_so_far.png)/](${stem}_best_so_far.png)/; s/](predicted_vs_measured.png)/](${stem}_predicted_vs_measured.png)/" \
      "$OUT/$stem.md"
  fi
  [ -d "$run" ] && cp -r "$run" "$WORK/files/agent_run"
  # What the run learned (accepted proposals, the ranker's rows), for `agent.promote --runs-root` here.
  [ -d "$WORK/runs/knowledge" ] && cp -r "$WORK/runs/knowledge" "$WORK/files/knowledge"
  return $rc
}

# One record of the machine and the run, rewritten after every step so an interrupted run still says
# how far it got.
write_record() {
  "$PY" - "$OUT/$NAME.json" "${results[@]}" <<'PY'
import json, os, platform, subprocess, sys
out, rows = sys.argv[1], sys.argv[2:]
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001  (a record, not a check)
        return "unavailable: %s" % e
record = {"python": platform.python_version(), "commit": os.environ.get("CAKE_COMMIT") or run("git", "rev-parse", "HEAD"),
          "nvidia_smi": run("nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm", "--format=csv,noheader")}
try:
    import torch
    record["torch"] = torch.__version__
    record["cuda"] = torch.version.cuda
    record["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    record["capability"] = list(torch.cuda.get_device_capability(0)) if torch.cuda.is_available() else None
except Exception as e:  # noqa: BLE001
    record["torch"] = "unavailable: %s" % e
try:
    import google.protobuf, grpc
    record["protobuf"], record["grpcio"] = google.protobuf.__version__, grpc.__version__
except Exception as e:  # noqa: BLE001
    record["protobuf"] = "unavailable: %s" % e
steps = [dict(zip(("step", "status", "seconds"), r.split())) for r in rows]
for s in steps:
    s["seconds"] = int(s["seconds"])
record["steps"] = steps
record["passed"] = bool(steps) and all(s["status"] == "passed" for s in steps)
json.dump(record, open(out, "w"), indent=1)
print(json.dumps({k: v for k, v in record.items() if k != "steps"}))
PY
}

bundle() {
  tar -czf "$OUT/${NAME}_files.tar.gz" -C "$WORK/files" . 2>>"$LOG" || say "could not bundle $WORK/files"
}

say "steps: $STEPS; results: $OUT; scratch: $WORK"
write_record >>"$LOG" 2>&1
for step in ${STEPS//,/ }; do
  case "$step" in
    service|tests|bench|agent) ;;
    *) say "unknown step '$step' (service, tests, bench, agent)"; status=1; continue ;;
  esac
  say "=== $step"
  start=$(date +%s)
  if [ "$step" = tests ]; then step_tests "$@" 2>&1 | tee -a "$LOG"; else "step_$step" 2>&1 | tee -a "$LOG"; fi
  rc=${PIPESTATUS[0]}
  verdict=passed
  [ "$rc" = 0 ] || { verdict=failed; status=1; }
  results+=("$step $verdict $(( $(date +%s) - start ))")
  say "=== $step $verdict (exit $rc, $(( $(date +%s) - start )) s)"
  write_record >>"$LOG" 2>&1
  bundle
done
say "$( [ $status = 0 ] && echo passed || echo FAILED ): ${results[*]}"
exit "$status"
