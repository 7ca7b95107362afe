"""The evolve and promote command lines: errors instead of tracebacks, no run left by a refused start,
Ctrl-C saying how to resume, nothing written into the checkout, earlier runs still found."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from agent import evolve, places, promote
from agent.learn import knowledge
from agent.measure import device
from agent.store import Store
from agent.testing import knowledge_copy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICK = ["--gpu", "off", "--in-process", "--plain", "--no-learn", "--evaluations", "3"]


def _tree_digest(directory):
    h = hashlib.sha256()
    for dirpath, dirnames, files in sorted(os.walk(directory)):
        dirnames.sort()
        for f in sorted(files):
            with open(os.path.join(dirpath, f), "rb") as fh:
                h.update(os.path.relpath(os.path.join(dirpath, f), directory).encode() + fh.read())
    return h.hexdigest()


@pytest.fixture
def state(monkeypatch, tmp_path):
    """CAKE's state directory in tmp_path, no runs root from the environment."""
    monkeypatch.setenv("CAKE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv(places.RUNS_ROOT_VARIABLE, raising=False)
    return tmp_path / "state"


def test_a_missing_knowledge_dir_is_an_error_and_records_nothing(state, tmp_path, capsys):
    assert evolve.main(["--knowledge-dir", str(tmp_path / "nowhere")] + QUICK) == 2
    err = capsys.readouterr().err
    assert err.startswith("evolve: --knowledge-dir %s: no such directory" % (tmp_path / "nowhere")), err
    assert not state.exists()


def test_an_unreachable_compiler_address_is_an_error_and_records_nothing(state, capsys):
    code = evolve.main(["--compiler", "grpc", "--compiler-address", "127.0.0.1:1", "--gpu", "off", "--plain"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("evolve: no compiler service answers at 127.0.0.1:1 (UNAVAILABLE"), err
    assert "Traceback" not in err and not state.exists()


@pytest.mark.skipif(device.probe("sm_90a").usable, reason="this machine has the GPU --gpu on asks for")
def test_gpu_on_without_a_gpu_is_an_error_and_records_nothing(state, capsys):
    assert evolve.main(["--gpu", "on", "--in-process", "--plain"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evolve: --gpu on, but there is no GPU to measure sm_90a kernels on: "), err
    assert not state.exists()


def test_a_bad_flag_is_a_usage_error_and_records_nothing(state, capsys):
    with pytest.raises(SystemExit) as e:
        evolve.main(["--evaluations", "-1"] + QUICK[:-2])
    assert e.value.code == 2 and "--evaluations must be at least 0" in capsys.readouterr().err
    assert not state.exists()


def test_a_default_run_writes_only_under_the_state_directory(state, capsys):
    checkout_knowledge = _tree_digest(knowledge.default_dir())
    assert evolve.main(["--gpu", "off", "--in-process", "--plain", "--evaluations", "12"]) == 0
    out = capsys.readouterr().out
    runs = state / "agent" / "runs"
    [run] = [d for d in os.listdir(str(runs)) if d != "knowledge"]
    assert "report: %s" % (runs / run / "report.md") in out
    assert (runs / run / "summary.json").exists()
    assert _tree_digest(knowledge.default_dir()) == checkout_knowledge


def test_runs_at_the_old_location_are_still_found(state, tmp_path, monkeypatch, capsys):
    checkout = tmp_path / "checkout"
    shutil.copytree(knowledge.PACKAGE_DIR, str(checkout / "agent" / "knowledge"))
    old = checkout / ".cake" / "agent" / "runs" / "old-run"
    old.mkdir(parents=True)
    Store(str(old / "agent.db")).start_run("old-run", {"name": "t"}, {"mode_line": "x"}, "cost_model", 0)
    monkeypatch.setenv("BUILD_WORKSPACE_DIRECTORY", str(checkout))
    where = places.resolve()
    assert where.knowledge_base == str(checkout / "agent" / "knowledge")
    assert where.roots() == [str(state / "agent" / "runs"), str(checkout / ".cake" / "agent" / "runs")]
    assert evolve.main(QUICK) == 0
    assert "earlier runs at the old location %s (1) are read by the outer loop" % old.parent in capsys.readouterr().out


def test_promote_writes_accepted_changes_into_the_knowledge_dir(tmp_path, capsys):
    base, root = knowledge_copy(tmp_path), str(tmp_path / "runs")
    kb = knowledge.Knowledge(base, os.path.join(root, "knowledge"))
    kb.accept(knowledge.TACTICS, {"fields": {"tactics": {"persistent": {"weight": 2.0}}}}, "weights from 1 run")
    args = ["--runs-root", root, "--knowledge-dir", base]
    assert promote.main(args + ["--dry-run"]) == 0
    assert "1 change(s) to promote (dry run" in capsys.readouterr().out
    before = knowledge.read(knowledge.PACKAGE_DIR, knowledge.TACTICS)["version"]
    assert knowledge.read(base, knowledge.TACTICS)["version"] == before
    assert promote.main(args) == 0
    assert "promoted 1 change(s) into %s" % base in capsys.readouterr().out
    assert knowledge.read(base, knowledge.TACTICS)["version"] == before + 1
    assert promote.main(args) == 0 and "nothing to promote" in capsys.readouterr().out
    assert promote.main(["--knowledge-dir", str(tmp_path / "nowhere")]) == 2


def test_ctrl_c_saves_the_run_and_says_how_to_resume(tmp_path):
    run_dir = str(tmp_path / "runs" / "r")
    cmd = [sys.executable, "-m", "agent.evolve", "--run-dir", run_dir, "--knowledge-dir", knowledge_copy(tmp_path),
           "--gpu", "off", "--in-process", "--plain", "--no-learn", "--throttle", "0.05", "--evaluations", "200"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = os.path.join(run_dir, "agent.db")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (os.path.exists(db) and Store(db).count("candidates") >= 5):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out[-2000:], err[-2000:])
    assert "Traceback" not in err
    assert "evolve: interrupted; everything so far is saved in %s. Resume the run with:\n" % run_dir in err
    assert "python3 -m agent.evolve --run-dir %s --knowledge-dir %s" % (run_dir, tmp_path / "knowledge") in err
    s = Store(db)
    assert s.run()["status"] == "interrupted" and s.count("candidates") >= 5


def test_the_learned_ranker_serves_measured_runs_unless_turned_off():
    import argparse

    from agent import loop, task as task_mod

    task, kb, logged = task_mod.task("kmeans-assign-paper"), knowledge.Knowledge(knowledge.PACKAGE_DIR), []
    on, off = argparse.Namespace(ranker="on"), argparse.Namespace(ranker="off")
    assert evolve._ranking(off, loop.MEASURE, task, kb, logged.append) is None
    assert evolve._ranking(on, loop.COST_MODEL, task, kb, logged.append) is None and not logged
    ranking = evolve._ranking(on, loop.MEASURE, task, kb, logged.append)
    assert len(ranking.prior) == 692  # the three H200 runs of this task in benchmarks/datasets
    assert logged == ["learned ranker: 692 measured rows of kmeans-assign-paper in the knowledge, refit as this run "
                      "measures"]


def test_a_measured_run_without_the_rankers_library_is_refused_before_it_starts(state, monkeypatch, capsys):
    from agent.learn import ranker

    monkeypatch.setattr(ranker, "missing", lambda: "the learned ranker needs lightgbm and numpy (No module named "
                                                   "'lightgbm')")
    assert evolve.main(["--fake-measure", "--in-process", "--plain", "--no-learn", "--evaluations", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evolve: --ranker on: the learned ranker needs lightgbm and numpy (No module named "
                          "'lightgbm'); install it"), err
    assert "or pass --ranker off" in err and not state.exists()
