"""The pipeline on a local Ray cluster of 3 CPUs and 2 declared (fake) GPUs: the serial loop's result at window 0,
every measurement actor used, actors killed mid-run without a recorded row lost, and no process left behind."""

import os
import time

import pytest

from agent import loop
from agent.executors import testing

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    from agent.executors import ray_cluster

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback test cluster: no token file under HOME
    link = ray_cluster.init(num_cpus=3, num_gpus=2)
    session = ray._private.worker._global_node.get_session_dir_path()
    yield
    ray_cluster.shutdown(link)
    deadline = time.monotonic() + 30
    while _processes_of(session) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _processes_of(session), "Ray processes left behind"


def _processes_of(session):
    """PIDs of live processes whose command line names the Ray session directory."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if session.encode() in f.read():
                    out.append(pid)
        except OSError:
            continue
    return out


def test_ray_at_window_0_matches_the_serial_loop_and_measures_on_every_gpu(tmp_path, cluster):
    serial, why = testing.run(str(tmp_path / "serial"), loop.MEASURE, evaluations=8)
    store, why_ray = testing.run(str(tmp_path / "ray"), loop.MEASURE, "ray", window=0, workers=3, gpus=2,
                                 evaluations=8)
    assert why == why_ray == "8 evaluations"
    assert testing.rows(store) == testing.rows(serial)
    best, serial_best = store.ranked(limit=1)[0], serial.ranked(limit=1)[0]
    assert best["fitness_s"] == serial_best["fitness_s"] and best["ir_hash"] == serial_best["ir_hash"]
    devices = {store.measurement(r["id"])["detail"] for r in store.candidates("measured")}
    assert {'"0"', '"1"'} <= {d[d.index(":") + 1:].split(",")[0].strip() for d in devices}, devices


def test_actors_killed_mid_run_lose_nothing_recorded(tmp_path, cluster):
    calm, _ = testing.run(str(tmp_path / "calm"), loop.MEASURE, "ray", window=1, workers=3, gpus=2,
                          fake_delay_s=0.2, evaluations=10)
    killed = []

    def kill_actors(executor, db_path):
        for pool in ("gpu", "cpu"):
            while testing.finished(db_path) < 8 * (len(killed) + 1):
                time.sleep(0.2)
            ray.kill(executor.actors(pool)[0], no_restart=False)  # Ray restarts it; its jobs come back lost
            killed.append(pool)

    store, why = testing.run(str(tmp_path / "killed"), loop.MEASURE, "ray", window=1, workers=3, gpus=2,
                             fake_delay_s=0.2, during=kill_actors, evaluations=10)
    assert killed == ["gpu", "cpu"] and why == "10 evaluations"
    assert testing.rows(store) == testing.rows(calm)
    assert store.count("measurements") == calm.count("measurements") >= 10
