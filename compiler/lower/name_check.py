"""Pass: every name lowering prints into CUDA source is a name (compiler/ir/names.py).

Lowering prints params, regions, barriers, symbols, loop variables and the kernel's
own name into the generated source; a string there that is not an identifier could
end a line and start a preprocessor directive (`#include` of any file nvcc can read).
This pass runs first and refuses such a kernel at the field's IR path, whether or
not the kernel was verified.
"""

from compiler.ir import names
from compiler.lower.context import LoweringError


def check_names(ctx):
    for path, field, value in names.invalid_names(ctx.kernel):
        raise LoweringError(
            path,
            "%s %s is not a C identifier; lowering prints names into CUDA source" % (field, names.quoted(value)),
            "rename it to a C identifier: a letter or underscore, then letters, digits or underscores",
        )
