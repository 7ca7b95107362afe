"""The run database: one transaction per outcome, WAL mode, statistics and proposals."""

from cake.compiler.v1 import diagnostics_pb2 as dpb

from agent.learn.signatures import cluster, failure, normalize
from agent.store import Store


def _store(tmp_path):
    s = Store(str(tmp_path / "agent.db"))
    s.start_run("r", {"name": "t"}, {"mode_line": "x"}, "cost_model", 0)
    return s


def test_wal_mode_and_the_run_row(tmp_path):
    s = _store(tmp_path)
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert s.run()["status"] == "running"
    s.finish_run("finished")
    assert s.run()["status"] == "finished"


def test_record_writes_everything_with_the_status_and_inserts_repairs(tmp_path):
    s = _store(tmp_path)
    cid = s.insert_candidate("h1", "kernel a {}", None, None, "seed", "seed", 0)
    d = dpb.Diagnostic(id="CAKE-RES-001", severity=dpb.SEVERITY_ERROR, path="kernel.regions[1]", message="m", fix_hint="f")
    children = s.record(cid, "invalid", diagnostics=[("verify", d)],
                        failures=[failure("verify", "verifier", d.id, d.message, "h1")],
                        rewards=[("stages_up", -0.5)],
                        children=[("h2", "kernel b {}", None, cid, "repair:stages_down", "repair", 0, 1)])
    assert s.candidate(cid)["status"] == "invalid"
    assert [r["diag_id"] for r in s.diagnostics(cid)] == ["CAKE-RES-001"]
    assert s.failure_counts() == {"verify:verifier": 1}
    assert s.tactic_stats() == {"stages_up": [1, -0.5]}
    [child] = children
    assert s.candidate(child)["status"] == "pending" and s.candidate(child)["repair_depth"] == 1
    s.record(child, "evaluated", 2e-5, prediction={"predicted_s": 2e-5, "bottleneck": "wgmma", "calibration": "v",
                                                   "report": "{}", "features": {"launch_s": 4e-6}}, device_s=1.5)
    assert s.ranked()[0]["id"] == child and s.first()["id"] == cid
    assert s.meta("device_s") == 1.5


def test_a_failed_transaction_leaves_nothing(tmp_path):
    s = _store(tmp_path)
    cid = s.insert_candidate("h1", "kernel a {}", None, None, "seed", "seed", 0)
    try:
        s.record(cid, "invalid", rewards=[("t", 0.0)], children=[("h2",)])  # a malformed child aborts it all
    except ValueError:
        pass
    assert s.candidate(cid)["status"] == "pending" and s.tactic_stats() == {}


def test_signatures_ignore_numbers_names_and_paths():
    a = normalize("role `mma` holds 68 registers at kernel.roles[1] (+16 margin)")
    b = normalize("role `load` holds 72 registers at kernel.roles[0] (+16 margin)")
    assert a == b == "role <name> holds # registers at <path> (# margin)"
    rows = [failure("runtime", "timeout", "", "no answer within 120 s", h) for h in ("a", "b", "b")]
    [(sig, members)] = cluster(rows).items()
    assert sig == "runtime|timeout|-|no answer within # s" and len(members) == 2
