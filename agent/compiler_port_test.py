"""Both compiler ports answer alike: diagnostics, predictions, analysis errors, learned rules, calibration, builds."""

import pytest

from agent.compiler_port import ANALYSIS_ID, GrpcPort, InProcessPort, open_port
from agent.rewrites import min_blocks
from compiler.analysis import calibration as cal_mod
from compiler.verify.declarative import rules_from_data
from kernels.kmeans.schedules import assign_sm90a

SHAPES = {"B": 1, "N": 65536, "K": 1024, "D": 128}
LEARNED = rules_from_data([{"id": "CAKE-LEARNED-901", "severity": "error", "doc": "three-stage rings are banned here",
                            "when": {"feature": "region.stages", "op": "==", "value": 3},
                            "message": "region {region.name} has 3 stages", "fix_hint": "use 2"}])


@pytest.fixture(scope="module", params=["in-process", "grpc"])
def port(request):
    slow = cal_mod.load().updated({"eff_wgmma": 0.4}, version="test-slow")
    with open_port(request.param, LEARNED, slow) as p:
        yield p


def test_the_kind_asked_for_is_the_kind_given(port):
    assert isinstance(port, InProcessPort if port.name == "in-process" else GrpcPort)


def test_verify_reports_built_in_and_learned_rules(port):
    ids = [d.id for d in port.verify(min_blocks(assign_sm90a(), 2))]
    assert "CAKE-RES-009" in ids and "CAKE-LEARNED-901" in ids
    assert [d.id for d in port.verify(assign_sm90a(stages=2))] == []


def test_analyze_predicts_with_the_agents_calibration(port):
    a = port.analyze(assign_sm90a(), SHAPES, "sm_90a/H200")
    assert a.report.calibration == "test-slow" and a.report.device == "sm_90a/H200"
    assert a.features["wgmma_s"] > 0
    default = InProcessPort().analyze(assign_sm90a(), SHAPES, "sm_90a/H200").report
    assert a.report.predicted_seconds > default.predicted_seconds


def test_an_analysis_failure_is_a_diagnostic(port):
    a = port.analyze(assign_sm90a(consumers=3), SHAPES, None)
    assert a.report is None and a.features == {}
    [d] = a.diagnostics
    assert (d.id, d.path) == (ANALYSIS_ID, "kernel.contract.constraints[0]") and "violate" in d.message


def test_compile_returns_the_generated_cuda(port):
    b = port.compile(assign_sm90a())
    assert b.compiled is not None and "cake_kmeans_assign_sm90a" in b.compiled.cuda_source and b.compiled.cubin


def test_an_unknown_port_is_refused():
    with pytest.raises(ValueError, match="unknown compiler port"):
        with open_port("carrier-pigeon"):
            pass
