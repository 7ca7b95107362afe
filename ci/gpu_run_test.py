"""ci/gpu_run.sh's wiring, on a machine without a GPU: every step runs, each failure fails the run with its
reason, and what comes back fits what the lent machine returns (at most 8 files, no folders)."""

import json
import os
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gpu_present():
    from conftest import gpu_available

    return gpu_available()


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    if _gpu_present():
        pytest.skip("this machine has a GPU: ci/gpu_run.sh is meant to pass here, not to fail")
    out, work = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("work")
    env = dict(os.environ, OUT=str(out), CAKE_GPU_WORK=str(work), PYTHON=sys.executable,
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p), CAKE_GPU_STEPS="service,tests,agent,bogus")
    proc = subprocess.run([os.path.join(ROOT, "ci", "gpu_run.sh"), "kernels/smoke/smoke_gpu_test.py"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    name = "gpu_run_service_tests_agent_bogus_h200"
    return proc, out, name


def test_without_a_gpu_the_run_fails_and_says_why(cpu_run):
    proc, out, name = cpu_run
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = (out / (name + ".log")).read_text()
    assert "service: SIGTERM -> exit 0" in log and "with ir.proto's comment" in log
    assert "REQUIRE_GPU=1 but no GPU" in log
    assert "evolve: --gpu on, but there is no GPU to measure sm_90a kernels on" in log
    assert "unknown step 'bogus'" in log
    assert "[gpu_run] FAILED: service passed" in log


def test_the_record_names_each_steps_verdict(cpu_run):
    _, out, name = cpu_run
    record = json.loads((out / (name + ".json")).read_text())
    assert [(s["step"], s["status"]) for s in record["steps"]] == [
        ("service", "passed"), ("tests", "failed"), ("agent", "failed")]
    assert record["passed"] is False and record["python"]


def test_what_comes_back_fits_the_lent_machines_limits(cpu_run):
    _, out, name = cpu_run
    files = sorted(os.listdir(str(out)))
    assert files == sorted([name + ".log", name + ".json", name + "_files.tar.gz"])
    assert all(os.path.isfile(str(out / f)) for f in files) and len(files) <= 8
    with tarfile.open(str(out / (name + "_files.tar.gz"))) as tar:
        names = tar.getnames()
    assert "./service.log" in names and "./gpu_tests.xml" in names
