"""A request's Program as a Kernel (with a source map when it came as text), or INVALID_ARGUMENT.

A missing program, bytes that are not a Kernel and text that is not CAKE IR are
malformed requests: each is a BadRequest field violation on the field at fault,
and a syntax error also carries ErrorInfo (reason IR_TEXT_SYNTAX) with its line
and column. A well-formed kernel with wrong contents (unknown enum values
included: proto3 keeps them as numbers) is left to the verifier.
"""

from google.protobuf.message import DecodeError

from cake.ir.v1 import ir_pb2

from compiler.ir.text import ParseError, parse_kernel
from compiler.service import errors

FORMS = ("program.kernel", "program.text", "program.kernel_bytes")


def load(request):
    """(kernel, source_map or None) of request.program; ServiceError when it is malformed."""
    form = request.program.WhichOneof("form") if request.HasField("program") else None
    if form == "kernel":
        return request.program.kernel, None
    if form == "text":
        try:
            parsed = parse_kernel(request.program.text)
        except ParseError as e:
            raise errors.invalid_argument(
                "program.text is not CAKE IR: %s" % e,
                [("program.text", "%d:%d: %s" % (e.line, e.column, e.message))],
                reason="IR_TEXT_SYNTAX",
                metadata={"line": str(e.line), "column": str(e.column)},
            ) from None
        return parsed.kernel, parsed.source_map
    if form == "kernel_bytes":
        kernel = ir_pb2.Kernel()
        try:
            kernel.ParseFromString(request.program.kernel_bytes)
        except DecodeError as e:
            raise errors.invalid_argument(
                "program.kernel_bytes is not a serialized cake.ir.v1.Kernel",
                [("program.kernel_bytes", "not a serialized cake.ir.v1.Kernel: %s" % e)],
            ) from None
        return kernel, None
    raise errors.invalid_argument("the request has no program", [("program", "set one of %s" % ", ".join(FORMS))])


def locate(diagnostics, source_map):
    """Give diagnostics without a text location the location of their path (build findings)."""
    if source_map is None:
        return diagnostics
    for d in diagnostics:
        if not d.HasField("location"):
            where = source_map.lookup(d.path)
            if where:
                d.location.line, d.location.column = where
    return diagnostics
