"""autotune=True: the candidates ranked by what was measured, the fastest remembered per exact shape (in the
process and in the user's tuning database), and the arguments refused where they contradict."""

import pytest
import torch

from kernels.knn import api, dispatch, variants
from runtime.tuning_db import TuningDB, user_path

SHAPE = (1, 128, 10_000_000, 128, 10)


def _db(times, bucket):
    return TuningDB("knn", "Fake GPU", "", {bucket: {"variant": min(times, key=times.get), "shape": {}, "times_ms": times}})


def test_candidates_come_in_the_order_the_bucket_measured_them():
    times = {"rows_r2_c1_n128+seed": 0.5, "rows_r1_c4_n64+noseed": 0.2, "cols+seed": 0.1}  # cols does not fit Q 128
    ranked = dispatch.Picker([_db(times, dispatch.bucket_key(*SHAPE))]).ranked(*SHAPE)
    assert [v.name for v in ranked[:2]] == ["rows_r1_c4_n64+noseed", "rows_r2_c1_n128+seed"]
    assert variants.BY_NAME["cols+seed"] not in ranked and len(ranked) == len(set(ranked)) > 2


def test_unmeasured_candidates_start_with_the_planners_own_choice():
    p, rows = dispatch.plans(*SHAPE, None, 132)
    assert dispatch.Picker().ranked(*SHAPE, sms=132)[0] == variants.of_plan(p, bool(rows))


@pytest.fixture
def fake_device(monkeypatch, tmp_path):
    monkeypatch.setenv("CAKE_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "Fake GPU")
    monkeypatch.setattr(dispatch, "_pickers", {})
    return tmp_path


def test_autotune_keeps_the_fastest_for_the_shape_here_and_for_later_processes(fake_device, monkeypatch):
    b, q, m, d, k = SHAPE
    fast = dispatch.Picker().ranked(*SHAPE)[2].name  # the third candidate is the fastest
    ran = []
    monkeypatch.setattr(dispatch, "search_into", lambda *a, config=None, **kw: ran.append(config))
    monkeypatch.setattr(dispatch, "time_search", lambda run, reps: run() or (0.1 if ran[-1].name == fast else 0.3))

    class Db:
        shape, calls = (b, m, d), {"old": "prepared"}

        @classmethod
        def forget(cls):
            cls.calls = {}

    q3 = torch.zeros(b, q, d, dtype=torch.bfloat16)
    assert dispatch.autotune(q3, Db, k, top=3) == fast
    assert len(ran) == 3 and Db.calls == {}  # searches prepared before the choice are dropped
    assert dispatch.picker(None).pick(*SHAPE) == (variants.BY_NAME[fast], "autotuned")
    assert dispatch.autotuned(q3, m, k)
    saved = TuningDB.load(user_path("knn", "Fake GPU"))
    (entry,) = saved.entries.values()
    assert entry["variant"] == fast and entry["shape"] == dict(zip("BQMDk", SHAPE)) and len(entry["times_ms"]) == 3
    monkeypatch.setattr(dispatch, "_pickers", {})  # a later process reads the user's database
    assert dispatch.picker(None).pick(*SHAPE) == (variants.BY_NAME[fast], "autotuned")


def test_autotune_refuses_k_past_the_register_lists(fake_device):
    with pytest.raises(ValueError, match="k <= 32"):
        dispatch.autotune(torch.zeros(1, 4, 64, dtype=torch.bfloat16), None, 33)


def test_config_and_autotune_contradict():
    q = torch.zeros(4, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="config forces a variant and autotune=True measures them"):
        api.knn(q, q, 3, config="cols+noseed", autotune=True)
    with pytest.raises(ValueError, match="autotune must be a bool"):
        api.knn(q, q, 3, autotune="yes")
