"""The compiler's steps on one program, in process: what `cake` (the command line) and the MCP server run.

Each step verifies first, as the service does, and answers with located diagnostics:

    program = load(text, "gemm.cake", target="sm_80")   # Program, or ParseError / ValueError
    verify(program)                     # [Diagnostic]
    analyze(program, shapes, device)    # ([Diagnostic], CostReport or None)
    lower(program)                      # ([Diagnostic], LoweringContext or None): CUDA C++ and launch metadata
    compile(program)                    # ([Diagnostic], CompiledKernel or None): cubin, PTX, resources (needs nvcc)

A ParseError means the text is not CAKE IR (`parse` turns it into a CAKE-SYNTAX-001
diagnostic at its line and column); an unknown target or device is a ValueError naming
the valid ones. Anything else raised is a bug of the compiler.
"""

import dataclasses
import re

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler import analysis as analysis_
from compiler import verify as verify_
from compiler.build import diagnostics as build_diagnostics
from compiler.build import driver
from compiler.ir.enums import value_of
from compiler.ir.text import ParseError, SourceMap, parse_kernel
from compiler.lower import LoweringError
from compiler.lower import lower as lower_
from compiler.targets import TARGETS

ANALYSIS_ID = "CAKE-ANALYSIS-001"
SYNTAX_ID = "CAKE-SYNTAX-001"
# An AnalysisError message that starts with the IR path it concerns.
_PATH_PREFIX = re.compile(r"^(kernel(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): (.*)$", re.S)


@dataclasses.dataclass
class Program:
    """A kernel, where it came from, and where its nodes are in the text."""

    kernel: ir_pb2.Kernel
    source_map: SourceMap
    filename: str


def load(text, filename="<text>", target=None):
    """The Program in `text`, retargeted to `target` ("sm_80", ...) when given."""
    parsed = parse_kernel(text, filename=filename)
    if target:
        if target not in TARGETS:
            raise ValueError("unknown target %r: CAKE compiles for %s" % (target, ", ".join(TARGETS)))
        parsed.kernel.target = value_of(ir_pb2.Target.DESCRIPTOR, target)
    return Program(parsed.kernel, parsed.source_map, filename)


def syntax_diagnostic(error):
    """A ParseError as a CAKE-SYNTAX-001 error at its line and column."""
    d = diagnostics_pb2.Diagnostic(severity=diagnostics_pb2.SEVERITY_ERROR, id=SYNTAX_ID,
                                   category=diagnostics_pb2.CATEGORY_STRUCTURE, message=error.message, path="kernel",
                                   fix_hint="Fix the syntax at this location; docs/ir_text.md gives the grammar.")
    d.location.line, d.location.column = error.line, error.column
    return d


def parse(text, filename="<text>", target=None):
    """(Program, []) or, when `text` is not CAKE IR, (None, [its syntax diagnostic])."""
    try:
        return load(text, filename, target), []
    except ParseError as e:
        return None, [syntax_diagnostic(e)]


def _located(program, diags):
    """Diagnostics without a text location get their path's (build findings carry only paths)."""
    for d in diags:
        if not d.location.line:
            where = program.source_map.lookup(d.path)
            if where:
                d.location.line, d.location.column = where
    return list(diags)


def verify(program):
    """The verifier's diagnostics, located in the text."""
    return verify_.verify(program.kernel, program.source_map)


def analysis_diagnostic(error):
    """An AnalysisError as a CAKE-ANALYSIS-001 diagnostic at the IR path its message starts with."""
    m = _PATH_PREFIX.match(str(error))
    path, message = (m.group(1), m.group(2)) if m else ("kernel", str(error))
    return diagnostics_pb2.Diagnostic(
        severity=diagnostics_pb2.SEVERITY_ERROR,
        id=ANALYSIS_ID,
        category=diagnostics_pb2.CATEGORY_ANALYSIS,
        message=message,
        path=path,
        fix_hint="Give the analysis what it lacks: bind the symbol in `shapes`, or fix the value the message names.",
    )


def analyze(program, shapes=None, device=None):
    """(diagnostics, CostReport or None): verified first; `device` as analysis.analyze takes it."""
    diags = verify(program)
    if verify_.has_errors(diags):
        return diags, None
    try:
        report = analysis_.analyze(program.kernel, dict(shapes or {}), device or None)
    except analysis_.AnalysisError as e:
        return diags + _located(program, [analysis_diagnostic(e)]), None
    return diags, report


def lower(program):
    """(diagnostics, LoweringContext or None): its .source is the CUDA C++, .launch the launch metadata."""
    diags = verify(program)
    if verify_.has_errors(diags):
        return diags, None
    try:
        ctx = lower_(program.kernel)
    except LoweringError as e:
        return diags + _located(program, [build_diagnostics.lowering_error(e)]), None
    return diags, ctx


def compile(program, cache=None):  # noqa: A001  (the step's name)
    """(diagnostics, CompiledKernel or None): verified, lowered and built by nvcc (or the compile cache)."""
    diags = verify(program)
    if verify_.has_errors(diags):
        return diags, None
    result = driver.build(program.kernel, cache)
    return diags + _located(program, result.diagnostics), result.compiled


def has_errors(diags):
    return verify_.has_errors(diags)
