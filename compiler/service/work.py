"""What the service's worker processes do: parse, verify, analyze and lower a request's kernel,
load the rules a request gives as data, refit the cost model's constants.

Each task takes the request's bytes and `stage`, a callback naming each stage as it
begins ("parse", "rules", "verify", "analyze", "lower", "calibrate"): the server times every stage against
its limit and kills a worker that overruns one (workers.py). A task returns the
response's bytes, or for Compile either the response or what nvcc must build; a
malformed request raises errors.ServiceError. These are plain functions of their
arguments (and the compile cache), so tests call them directly.

skip_verify is the caller's promise that the kernel verifies. When lowering or the
analysis fails on such a kernel with anything but its own error, the promise is
checked: the verifier's errors are the answer if it finds any (the kernel was not
valid), and only a kernel that verifies clean makes the failure a compiler bug.
"""

import dataclasses
import json
import re

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler import analysis, verify as verifier
from compiler.analysis import calibration as cost_calibration
from compiler.build import diagnostics as build_diagnostics
from compiler.build import driver, nvcc
from compiler.ir.enums import value_of
from compiler.lower import LoweringError
from compiler.service import catalog, errors, programs

ANALYSIS_ID = "CAKE-ANALYSIS-001"

# An AnalysisError message that starts with the IR path it concerns.
_PATH_PREFIX = re.compile(r"^(kernel(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): (.*)$", re.S)


@dataclasses.dataclass
class Done:
    """A finished Compile: the response's bytes; for a compiled kernel also its cache key and
    the response's diagnostics (a CompileResponse holding only them), which the server keeps
    to answer the same request from the cache alone."""

    response: bytes
    key: str = None
    diagnostics: bytes = b""


@dataclasses.dataclass
class NeedsNvcc:
    """A Compile the cache could not answer: what nvcc must build, and the findings so far."""

    key: str
    kernel: str  # its name, for the log
    source: str
    target: str  # compiler.targets name
    diagnostics: bytes  # a CompileResponse holding the verifier's findings


def tasks(stage, cache):
    """Task name -> the function a worker runs for it (the server's workers, or an in-process client)."""
    return {
        "verify": lambda data: verify(data, stage),
        "analyze": lambda data: analyze(data, stage),
        "compile": lambda data: compile(data, stage, cache),
        "package": lambda data, needs, art, stderr: package(data, needs, art, stderr, stage, cache),
        "rules": lambda data: list_rules(data, stage),
        "calibrate": lambda data: calibrate(data, stage),
    }


def verify(data, stage):
    request = service_pb2.VerifyRequest.FromString(data)
    rules = _extra_rules(request)
    kernel, source_map = _load(request, stage)
    stage("verify")
    diags = verifier.verify(kernel, source_map, extra_rules=rules)
    response = service_pb2.VerifyResponse(diagnostics=diags, valid=not verifier.has_errors(diags))
    if request.want_features:
        response.features_json = json.dumps(verifier.kernel_features(kernel), sort_keys=True)
    return response.SerializeToString()


def analyze(data, stage):
    request = service_pb2.AnalyzeRequest.FromString(data)
    rules, calibration = _extra_rules(request), _calibration(request)
    kernel, source_map = _load(request, stage)
    diags = [] if request.skip_verify else _verified(kernel, source_map, stage, rules)
    if verifier.has_errors(diags):
        return service_pb2.AnalyzeResponse(diagnostics=diags).SerializeToString()
    stage("analyze")
    try:
        report, features = analysis.analyze_with_features(kernel, dict(request.shapes), request.device or None,
                                                          calibration)
    except analysis.AnalysisError as e:
        diags.append(_analysis_diagnostic(e, source_map))
        return service_pb2.AnalyzeResponse(diagnostics=diags).SerializeToString()
    except Exception:  # an unverified kernel: see the module's doc
        broken = _broken_promise(request, kernel, source_map, stage)
        return service_pb2.AnalyzeResponse(diagnostics=broken).SerializeToString()
    return service_pb2.AnalyzeResponse(diagnostics=diags, report=report, features=features).SerializeToString()


def compile(data, stage, cache):  # noqa: A001  (the RPC's name)
    """Done (verification or lowering failed, or the cache had it), or NeedsNvcc."""
    request = service_pb2.CompileRequest.FromString(data)
    kernel, source_map = _load_for_compile(request, stage)
    diags = [] if request.skip_verify else _verified(kernel, source_map, stage)
    if verifier.has_errors(diags):
        return Done(service_pb2.CompileResponse(diagnostics=diags).SerializeToString())
    stage("lower")
    try:
        if request.source_only:
            return Done(service_pb2.CompileResponse(diagnostics=diags, compiled=driver.source_only(kernel))
                        .SerializeToString())
        plan = driver.plan(kernel)
    except LoweringError as e:
        diags += programs.locate([build_diagnostics.lowering_error(e)], source_map)
        return Done(service_pb2.CompileResponse(diagnostics=diags).SerializeToString())
    except nvcc.NvccNotFound as e:
        raise errors.failed_precondition("cannot compile: %s" % e, "NVCC_NOT_FOUND") from None
    except Exception:  # an unverified kernel: see the module's doc
        broken = _broken_promise(request, kernel, source_map, stage)
        return Done(service_pb2.CompileResponse(diagnostics=broken).SerializeToString())
    hit = driver.cached(plan, cache)
    if hit is not None:
        return _done(diags + programs.locate(hit.diagnostics, source_map), hit.compiled, plan.key)
    return NeedsNvcc(
        plan.key, kernel.name, plan.ctx.source, plan.ctx.target.name,
        service_pb2.CompileResponse(diagnostics=diags).SerializeToString(),
    )


def package(data, needs, artifacts, nvcc_stderr, stage, cache):
    """Done for a Compile whose nvcc run ended: `artifacts` (nvcc.CudaArtifacts) when it built,
    else `nvcc_stderr` (its messages, turned into diagnostics at IR paths)."""
    request = service_pb2.CompileRequest.FromString(data)
    kernel, source_map = _load_for_compile(request, stage)
    stage("lower")
    plan = driver.plan(kernel)  # lowered before, with the same result
    diags = list(service_pb2.CompileResponse.FromString(needs.diagnostics).diagnostics)
    if artifacts is None:
        result = driver.nvcc_failed(plan, nvcc.NvccError("nvcc failed", nvcc_stderr))
        diags += programs.locate(result.diagnostics, source_map)
        return Done(service_pb2.CompileResponse(diagnostics=diags).SerializeToString())
    result = driver.package(plan, artifacts, cache)
    return _done(diags + programs.locate(result.diagnostics, source_map), result.compiled, plan.key)


def list_rules(data, stage):
    """ListRules with rules given as data: the built-in rules, then those (INVALID_ARGUMENT when malformed)."""
    request = service_pb2.ListRulesRequest.FromString(data)
    stage("rules")
    return catalog.rules_response(_extra_rules(request)).SerializeToString()


def calibrate(data, stage):
    """The cost model's constants refitted to the request's samples (INVALID_ARGUMENT naming a bad one)."""
    request = service_pb2.CalibrateRequest.FromString(data)
    stage("parse")
    base = _calibration(request) or cost_calibration.load()
    samples = _samples(request, "samples", base)
    held_out = _samples(request, "held_out", base)
    stage("calibrate")
    refit = cost_calibration.refit(samples, held_out, base, request.version or None)
    return service_pb2.CalibrateResponse(
        calibration_json=json.dumps(refit.calibration.to_json(), sort_keys=True),
        constants=dict(refit.calibration.constants), error_before=refit.error_before, error_after=refit.error_after,
    ).SerializeToString()


def _samples(request, field, base):
    """The request's `field` samples as (features, seconds) pairs; INVALID_ARGUMENT at the first unfit one."""
    out = []
    for i, sample in enumerate(getattr(request, field)):
        features = dict(sample.features)
        problem = cost_calibration.measurement_problem(features, sample.measured_seconds, base.constants)
        if problem:
            raise errors.invalid_argument("%s[%d] cannot be fitted" % (field, i),
                                          [("%s[%d]" % (field, i), problem)])
        out.append((features, sample.measured_seconds))
    return out


def _done(diags, compiled, key):
    only_diags = service_pb2.CompileResponse(diagnostics=diags)
    response = service_pb2.CompileResponse(diagnostics=diags, compiled=compiled)
    return Done(response.SerializeToString(), key, only_diags.SerializeToString())


def _load(request, stage):
    stage("parse")
    return programs.load(request)


def _load_for_compile(request, stage):
    kernel, source_map = _load(request, stage)
    if request.target:  # the server checked the name
        kernel.target = value_of(ir_pb2.Target.DESCRIPTOR, request.target)
    return kernel, source_map


def _verified(kernel, source_map, stage, extra_rules=()):
    stage("verify")
    return list(verifier.verify(kernel, source_map, extra_rules=extra_rules))


def _extra_rules(request):
    """The request's extra_rules_json as verifier rules; INVALID_ARGUMENT saying what is wrong."""
    if not request.extra_rules_json:
        return []
    try:
        return verifier.rules_from_data(json.loads(request.extra_rules_json))
    except (ValueError, TypeError, KeyError) as e:  # json.JSONDecodeError and RuleError are ValueErrors
        raise errors.invalid_argument("extra_rules_json holds no valid rules",
                                      [("extra_rules_json", str(e))]) from None


def _calibration(request):
    """The request's calibration_json as cost-model constants (None: the compiler's own)."""
    if not request.calibration_json:
        return None
    try:
        return analysis.calibration_from_data(json.loads(request.calibration_json))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise errors.invalid_argument("calibration_json is no calibration", [("calibration_json", str(e))]) from None


def _broken_promise(request, kernel, source_map, stage):
    """Called while handling a failure of lowering or the analysis: the verifier's findings when the
    request skipped verification and the kernel does not verify; else the failure is re-raised (a bug)."""
    if not request.skip_verify:
        raise  # noqa: PLE0704  (re-raises the failure being handled)
    diags = _verified(kernel, source_map, stage)
    if not verifier.has_errors(diags):
        raise  # noqa: PLE0704
    return diags


def _analysis_diagnostic(error, source_map):
    m = _PATH_PREFIX.match(str(error))
    path, message = (m.group(1), m.group(2)) if m else ("kernel", str(error))
    d = diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR,
        id=ANALYSIS_ID,
        category=diagnostics_pb2.CATEGORY_ANALYSIS,
        message=message,
        path=path,
        fix_hint="Give the analysis what it lacks: bind the symbol in `shapes`, or fix the value the message names.",
    )
    return programs.locate([d], source_map)[0]
