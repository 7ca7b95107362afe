"""Declarative rules: loading validates everything, predicates match features, nothing runs as code."""

import json

import pytest
from cake.compiler.v1 import diagnostics_pb2

from compiler.ir.expr import E, as_expr
from compiler.testing.verifier_kernels import ring
from compiler.verify import features, load_rules, verify
from compiler.verify.context import Context
from compiler.verify.declarative import RuleError, rules_from_data

UNSWIZZLED = {
    "id": "CAKE-LEARNED-001",
    "category": "memory movement",
    "doc": "Unswizzled shared tiles of 256 bytes or more bank-conflict.",
    "when": {"feature": "region.swizzle", "op": "==", "value": "none"},
    "and": [
        {"feature": "region.space", "op": "==", "value": "shared"},
        {"feature": "region.stage_bytes", "op": ">=", "value": 256},
    ],
    "message": "region {region.name} ({region.stage_bytes} bytes a stage) is not swizzled",
    "fix_hint": "swizzle {region.name} 128b",
}


def test_loaded_rule_reports_at_the_feature_level(tmp_path):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [UNSWIZZLED]}))
    (rule,) = load_rules(str(path))
    (d,) = verify(ring(), extra_rules=[rule])
    assert (d.id, d.path, d.severity, d.category) == (
        "CAKE-LEARNED-001", "kernel.regions[0]", diagnostics_pb2.SEVERITY_WARNING, diagnostics_pb2.CATEGORY_MEMORY_MOVEMENT)
    assert d.message == "region s (256 bytes a stage) is not swizzled" and d.fix_hint == "swizzle s 128b"


def test_op_rules_see_role_and_kernel_features():
    (rule,) = rules_from_data([{
        "id": "CAKE-LEARNED-002", "severity": "error", "doc": "No TMA from a 1-warp producer on sm_90a.",
        "when": {"all": [{"feature": "op.kind", "op": "==", "value": "tma_load"},
                         {"feature": "role.warps", "op": "<", "value": 2},
                         {"feature": "kernel.target", "op": "in", "value": ["sm_90a"]}]},
        "message": "{op.kind} in role {role.name}", "fix_hint": "use a warpgroup",
    }])
    (d,) = verify(ring(), extra_rules=[rule])
    assert d.path.endswith(".tma_load") and d.message == "tma_load in role load"


def test_any_not_and_type_mismatches():
    (rule,) = rules_from_data([{
        "id": "CAKE-LEARNED-003", "doc": "d", "message": "m", "fix_hint": "f",
        "when": {"any": [{"feature": "barrier.count", "op": ">", "value": "two"},  # str vs int: false, no error
                         {"not": {"feature": "barrier.kind", "op": "!=", "value": "mbarrier"}}]},
    }])
    assert [d.path for d in verify(ring(), extra_rules=[rule])] == ["kernel.barriers[0]", "kernel.barriers[1]"]


@pytest.mark.parametrize("broken, problem", [
    ({"id": "LEARNED-1"}, "id must look like"),
    ({"id": "CAKE-SYNC-004"}, "already taken"),
    ({"when": {"feature": "region.color", "op": "==", "value": 1}}, "unknown feature"),
    ({"when": {"feature": "region.name", "op": "matches", "value": ".*"}}, "unknown op"),
    ({"when": {"feature": "region.name", "op": "in", "value": "sA"}}, "needs a list"),
    ({"when": {"feature": "region.name", "op": "==", "value": "s", "eval": "1"}}, "exactly feature, op and value"),
    ({"and": [{"feature": "op.kind", "op": "==", "value": "mma"}]}, "several levels"),
    ({"message": "{op.kind}"}, "does not see"),
    ({"severity": "fatal"}, "severity must be"),
    ({"category": "vibes"}, "category must be"),
    ({"fix_hint": ""}, "non-empty string"),
    ({"extra": 1}, "unknown keys"),
])
def test_malformed_rules_are_refused_with_a_reason(broken, problem):
    data = dict(UNSWIZZLED, **broken)
    with pytest.raises(RuleError, match=problem):
        rules_from_data([data])


def test_malformed_files_are_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(RuleError, match="not JSON"):
        load_rules(str(path))
    with pytest.raises(RuleError, match="a rule file holds a list"):
        rules_from_data({"rule": []})
    with pytest.raises(RuleError, match="already taken"):
        rules_from_data([UNSWIZZLED, UNSWIZZLED])


def test_feature_extraction_matches_the_catalogue():
    extracted = features.extract(Context(ring()))
    levels = {level for level, _, _ in extracted}
    assert levels == set(features.LEVELS)
    for level, path, feats in extracted:
        assert set(feats) <= set(features.FEATURES)
        assert {n for n in feats if n.startswith(level + ".")} == {n for n in features.FEATURES if n.startswith(level + ".")}
    kernel = dict(extracted[0][2])
    assert kernel["kernel.target"] == "sm_90a" and kernel["kernel.threads"] == 64


def test_op_threads_feature_counts_executing_threads():
    (rule,) = rules_from_data([{
        "id": "CAKE-LEARNED-004", "severity": "error", "doc": "expect_tx from one thread only.",
        "when": {"feature": "op.kind", "op": "==", "value": "mbarrier_expect_tx"},
        "and": [{"feature": "op.threads", "op": ">", "value": 1}],
        "message": "expect_tx by {op.threads} threads", "fix_hint": "guard it with `elected`",
    }])
    assert verify(ring(), extra_rules=[rule]) == []
    k = ring()
    k.roles[0].body[2].branch.cond.CopyFrom(as_expr(E.sym("warp") == 0))
    assert [d.message for d in verify(k, extra_rules=[rule]) if d.id == "CAKE-LEARNED-004"] == ["expect_tx by 32 threads"]
