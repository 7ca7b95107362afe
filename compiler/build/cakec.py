"""cakec: CAKE IR text -> CUDA C++ for one SM target (the Bazel cake_kernel macro's tool).

    cakec PROGRAM.cake [--target sm_90a] -o OUT.cu [--metadata OUT.launch.pb]

Parses the program, retargets it when --target differs from the program's own
target, verifies it, lowers it and writes the generated source (and optionally the
launch metadata). A program the verifier finds errors in is not lowered: its
diagnostics print located (file:line:col) and cakec exits 1, as it does on parse
and lowering errors, so the cake_kernel rule fails on an invalid program.
"""

import argparse
import sys

from cake.compiler.v1 import diagnostics_pb2
from cake.ir.v1 import ir_pb2

from compiler.build import diagnostics as build_diagnostics
from compiler.ir.enums import value_of
from compiler.ir.text import ParseError, parse_kernel
from compiler.lower import LoweringError, lower
from compiler.verify import has_errors, verify


def _report(program, source_map, d):
    line, col = source_map.lookup(d.path) or (0, 0)
    severity = diagnostics_pb2.Severity.Name(d.severity).replace("SEVERITY_", "").lower()
    sys.stderr.write("%s:%d:%d: %s[%s] %s: %s\n" % (program, line, col, severity, d.id, d.path, d.message))
    if d.fix_hint:
        sys.stderr.write("  fix: %s\n" % d.fix_hint)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cakec", description=__doc__.splitlines()[0])
    ap.add_argument("program")
    ap.add_argument("--target", default=None, help="sm_80, sm_90a or sm_100a (default: the program's)")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--metadata", default=None)
    args = ap.parse_args(argv)
    try:
        with open(args.program) as f:
            text = f.read()
    except OSError as e:
        sys.stderr.write("cakec: cannot read %s: %s\n" % (args.program, e.strerror or e))
        return 2
    try:
        parsed = parse_kernel(text, filename=args.program)
    except ParseError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    kernel = parsed.kernel
    if args.target:
        try:
            kernel.target = value_of(ir_pb2.Target.DESCRIPTOR, args.target)
        except ValueError as e:
            sys.stderr.write("cakec: %s\n" % e)
            return 2
    diags = verify(kernel, parsed.source_map)
    for d in diags:
        _report(args.program, parsed.source_map, d)
    if has_errors(diags):
        return 1
    try:
        ctx = lower(kernel)
    except LoweringError as e:
        _report(args.program, parsed.source_map, build_diagnostics.lowering_error(e))
        return 1
    with open(args.output, "w") as f:
        f.write(ctx.source)
    if args.metadata:
        with open(args.metadata, "wb") as f:
            f.write(ctx.launch.SerializeToString(deterministic=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
