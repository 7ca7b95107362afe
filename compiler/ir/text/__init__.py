"""The CAKE IR text form: `print_kernel` writes a kernel as text, `parse_kernel` reads it back exactly.

    from compiler.ir.text import parse_kernel, print_kernel
    parsed = parse_kernel(text, filename="gemm.cake")   # ParsedKernel(kernel, source_map)
    text = print_kernel(parsed.kernel)

| module | what |
|---|---|
| `lexer.py` | tokens, and ParseError (the one error the parser raises) |
| `literals.py` | how names, strings and floats are spelled |
| `reader.py` | a cursor over tokens with located readers of literals |
| `infix.py` | the infix form of integer expressions |
| `compact.py` | the hand-written compact forms (tile refs, windows, headers) |
| `schema.py` | how each field of each message is written, from the descriptors |
| `parse.py`, `printer.py` | the parser (with its source map) and the printer |

docs/ir_text.md describes the syntax.
"""

from compiler.ir.text.lexer import ParseError
from compiler.ir.text.parse import ParsedKernel, SourceMap, parse_kernel
from compiler.ir.text.printer import print_kernel, print_node

__all__ = ["ParseError", "ParsedKernel", "SourceMap", "parse_kernel", "print_kernel", "print_node"]
