"""Both compiler ports are the compiler service: the same answers (diagnostics, predictions, features,
analysis errors and their category, learned rules, calibration, refits, builds) over gRPC and in-process."""

import ast
import inspect
import json
import os

import pytest
from cake.compiler.v1 import diagnostics_pb2

from agent import compiler_port
from agent.compiler_port import ANALYSIS_ID, Refused, open_port
from agent.rewrites import min_blocks
from compiler import analysis
from compiler.analysis import calibration as cal_mod
from kernels.kmeans.schedules import assign_sm90a

SHAPES = {"B": 1, "N": 65536, "K": 1024, "D": 128}
LEARNED = [{"id": "CAKE-LEARNED-901", "severity": "error", "doc": "three-stage rings are banned here",
            "when": {"feature": "region.stages", "op": "==", "value": 3},
            "message": "region {region.name} has 3 stages", "fix_hint": "use 2"}]
SLOW = cal_mod.load().updated({"eff_wgmma": 0.4}, version="test-slow").to_json()
KINDS = ["in-process", "grpc"]
# Measured times of a few kernels whose wgmma runs at 60% of the model's efficiency: what a refit fits to.
VARIANTS = [assign_sm90a(block_k=b, stages=s, consumers=c) for b in (64, 128) for s in (2, 3) for c in (1, 2)]
SAMPLES = [(f, 4e-6 + f["wgmma_s"] / 0.48 + f["fp32_s"] / 0.6)
           for f in (analysis.features(k, SHAPES) for k in VARIANTS)]


@pytest.fixture(scope="module")
def ports():
    with open_port("in-process", LEARNED, SLOW) as local, open_port("grpc", LEARNED, SLOW) as remote:
        yield {"in-process": local, "grpc": remote}


def _answers(port):
    """Everything a port says about a few kernels, as comparable data."""
    def diags(ds):
        return [(d.id, d.path, d.category, d.severity, d.message) for d in ds]

    good, failing = port.analyze(assign_sm90a(), SHAPES, "sm_90a/H200"), port.analyze(assign_sm90a(consumers=3), SHAPES,
                                                                                     None)
    return {
        "verify_bad": diags(port.verify(min_blocks(assign_sm90a(), 2))),
        "verify_good": diags(port.verify(assign_sm90a(stages=2))),
        "features": port.features(assign_sm90a()),
        "report": good.report.SerializeToString(deterministic=True),
        "calibration_features": good.features,
        "analysis_error": diags(failing.diagnostics),
        "compile": port.compile(assign_sm90a()).compiled.cuda_source,
        "rules": [r.SerializeToString() for r in port.rules(LEARNED)],
        "refit": port.calibrate(SAMPLES[:6], SAMPLES[6:], SLOW, "test-refit"),
    }


def test_the_kind_asked_for_is_the_kind_given(ports):
    assert [ports[k].name for k in KINDS] == KINDS


def test_both_ports_give_identical_answers(ports):
    assert _answers(ports["in-process"]) == _answers(ports["grpc"])


@pytest.mark.parametrize("kind", KINDS)
def test_verify_reports_built_in_and_learned_rules(ports, kind):
    ids = [d.id for d in ports[kind].verify(min_blocks(assign_sm90a(), 2))]
    assert "CAKE-RES-009" in ids and "CAKE-LEARNED-901" in ids
    assert [d.id for d in ports[kind].verify(assign_sm90a(stages=2))] == []


@pytest.mark.parametrize("kind", KINDS)
def test_analyze_predicts_with_the_agents_calibration_and_returns_its_features(ports, kind):
    a = ports[kind].analyze(assign_sm90a(), SHAPES, "sm_90a/H200")
    assert a.report.calibration == "test-slow" and a.report.device == "sm_90a/H200"
    assert a.features["wgmma_s"] > 0
    with open_port(kind) as default_port:
        default = default_port.analyze(assign_sm90a(), SHAPES, "sm_90a/H200").report
    assert a.report.predicted_seconds > default.predicted_seconds


@pytest.mark.parametrize("kind", KINDS)
def test_an_analysis_failure_is_the_same_diagnostic_on_both(ports, kind):
    a = ports[kind].analyze(assign_sm90a(consumers=3), SHAPES, None)
    assert a.report is None and a.features == {}
    [d] = a.diagnostics
    assert (d.id, d.path, d.category) == (ANALYSIS_ID, "kernel.contract.constraints[0]",
                                          diagnostics_pb2.CATEGORY_ANALYSIS) and "violate" in d.message


@pytest.mark.parametrize("kind", KINDS)
def test_the_ir_features_learned_rules_are_written_over(ports, kind):
    levels = {level for level, _, _ in ports[kind].features(assign_sm90a())}
    assert levels == {"kernel", "role", "region", "barrier", "op"}


def test_malformed_learned_rules_are_refused_alike():
    from compiler.service.client import CompilerServiceError

    codes = []
    for kind in KINDS:
        with open_port(kind, [{"id": "CAKE-LEARNED-902"}]) as port:
            with pytest.raises(CompilerServiceError) as e:
                port.verify(assign_sm90a())
            codes.append((e.value.code.name, e.value.field_violations[0][0]))
    assert codes == [("INVALID_ARGUMENT", "extra_rules_json")] * 2


@pytest.mark.parametrize("kind", KINDS)
def test_rules_lists_the_built_in_rules_then_the_learned_ones(ports, kind):
    rules = ports[kind].rules(LEARNED)
    assert [r.id for r in rules][-1] == "CAKE-LEARNED-901" and len(rules) == len(ports[kind].rules()) + 1
    assert rules[-1].doc == LEARNED[0]["doc"] and rules[-1].severity == diagnostics_pb2.SEVERITY_ERROR


@pytest.mark.parametrize("kind", KINDS)
def test_a_refit_moves_the_constants_toward_the_measurements(ports, kind):
    r = ports[kind].calibrate(SAMPLES[:6], SAMPLES[6:], SLOW, "test-refit")
    assert r.calibration["version"] == "test-refit" and r.error_after < r.error_before / 10
    assert r.constants == {name: c["value"] for name, c in r.calibration["constants"].items()}
    assert r.constants != {name: c["value"] for name, c in SLOW["constants"].items()}
    with open_port(kind, calibration=r.calibration) as refitted:  # what Analyze takes
        assert refitted.analyze(VARIANTS[0], SHAPES, None).report.calibration == "test-refit"


def test_what_the_service_refuses_is_refused_alike(ports):
    whys = []
    for kind in KINDS:
        port = ports[kind]
        for call in (lambda: port.rules([{"id": "CAKE-LEARNED-902"}]),
                     lambda: port.calibrate([], [], None, "v"),
                     lambda: port.calibrate([({"wgmma_s": 1e-6}, 0.0)], [], None, "v"),
                     lambda: port.calibrate(SAMPLES, [({"warp_drive_s": 1.0}, 1e-5)], None, "v"),
                     lambda: port.calibrate(SAMPLES, [], {"version": "x"}, "v")):
            with pytest.raises(Refused) as e:
                call()
            whys.append((kind, str(e.value)))
    local, remote = ([w for k, w in whys if k == kind] for kind in KINDS)
    assert local == remote
    assert local == [
        "extra_rules_json holds no valid rules: rule CAKE-LEARNED-902: 'doc' must be a non-empty string",
        "no measurements to fit the constants to: give at least one CalibrationSample",
        "samples[0] cannot be fitted: measured time must be a positive number of seconds, not 0.0",
        "held_out[0] cannot be fitted: unknown features warp_drive_s (docs/cost_model.md lists them)",
        "calibration_json is no calibration: a calibration is an object with a version and its constants"
        " (calibration.json's format)",
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_source_only_port_lowers_without_nvcc(kind):
    with open_port(kind) as full, open_port(kind, source_only=True) as lowering:
        wanted, b = full.compile(assign_sm90a()).compiled, lowering.compile(assign_sm90a())
    assert b.diagnostics == [] and not b.compiled.cubin and not b.compiled.ptx and not b.compiled.toolchain
    assert (b.compiled.cuda_source, b.compiled.launch, b.compiled.ir_hash) == (wanted.cuda_source, wanted.launch,
                                                                             wanted.ir_hash)


def test_a_port_made_by_name_closes_its_own_service():
    port = compiler_port.in_process_port(LEARNED, source_only=True)
    try:
        assert "CAKE-LEARNED-901" in [d.id for d in port.verify(min_blocks(assign_sm90a(), 2))]
        assert port.compile(assign_sm90a()).compiled.cuda_source
    finally:
        port.close()
    assert not os.path.exists(port.client._build_root)  # the in-process service's build directory is gone


def test_compile_returns_the_generated_cuda(ports):
    b = ports["grpc"].compile(assign_sm90a())
    assert b.compiled is not None and "cake_kmeans_assign_sm90a" in b.compiled.cuda_source and b.compiled.cubin


def _compiler_imports(source):
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "compiler":  # `from compiler import x`: compiler.x
            imported.update("compiler." + a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    return {m for m in imported if m.split(".")[0] == "compiler"}


def test_the_port_imports_nothing_of_the_compiler_but_the_service_clients():
    compiler_modules = _compiler_imports(inspect.getsource(compiler_port))
    assert compiler_modules <= {"compiler.service.client", "compiler.service.inprocess"}, compiler_modules
    assert json.loads(json.dumps(LEARNED)) == LEARNED  # rules travel as plain data


# What agent code may import of the compiler besides the port's clients: the IR and its text form, the target
# facts, where CAKE writes, the corpus (the gate's programs), the service client for the Measure RPC, and the host
# record CPU benchmarks write (compiler/host.py, shared with the compiler's benchmarks).
SHARED = ("compiler.ir", "compiler.targets", "compiler.locations", "compiler.corpus", "compiler.service.client",
          "compiler.host")
# Agent files that import compiler internals beyond SHARED: none (the outer loop's rule checks and refits, and
# the tests' lowering-only builds, are service calls).
LOCAL = set()


def test_agent_code_reaches_the_compiler_only_through_the_port():
    root = os.path.dirname(os.path.abspath(compiler_port.__file__))
    internal = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            if not f.endswith(".py") or f.endswith("_test.py") or rel == "compiler_port.py":
                continue
            with open(os.path.join(dirpath, f)) as source:
                found = {m for m in _compiler_imports(source.read()) if not m.startswith(SHARED)}
            if found:
                internal[rel] = sorted(found)
    assert set(internal) == LOCAL, internal


def test_an_unknown_port_is_refused():
    with pytest.raises(ValueError, match="unknown compiler port"):
        with open_port("carrier-pigeon"):
            pass
