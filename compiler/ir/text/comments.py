"""Formatting that keeps comments: `format_text(text)` is the canonical print with the author's `#` comments.

The kernel protobuf has no place for comments, so they are carried across the print
by their anchors: a comment on a line of its own stays above the node that follows
it, a comment after code stays at the end of the line where the node before it
starts. Nodes are matched by IR path between the source map of the input and that of
the printed text, so a comment follows its node wherever the printer puts it. Comments
after the last node go at the end. The result parses to the same kernel (comments are
whitespace to the lexer), and formatting it again changes nothing.
"""

import bisect
import dataclasses

from compiler.ir.text.parse import parse_kernel
from compiler.ir.text.printer import print_kernel


@dataclasses.dataclass(frozen=True)
class Comment:
    line: int  # 1-based
    column: int  # 1-based, of the '#'
    text: str  # from the '#' to the end of the line
    own_line: bool  # nothing but whitespace before it


def comments(text):
    """Every `#` comment of CAKE IR text, in order (a '#' inside a string literal is not one)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        in_string = escaped = False
        for i, ch in enumerate(line):
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "#":
                out.append(Comment(number, i + 1, line[i:].rstrip(), not line[:i].strip()))
                break
    return out


def _starts(source_map):
    """Sorted (line, column, path) of every located node."""
    return sorted((line, column, path) for path, (line, column) in source_map.items())


def _printed_line(path, printed_map):
    where = printed_map.lookup(path)
    return where[0] if where else None


def format_text(text, filename="<text>"):
    """The canonical text of the kernel in `text` with its comments; ParseError if `text` is not CAKE IR."""
    parsed = parse_kernel(text, filename)
    printed = print_kernel(parsed.kernel)
    printed_map = parse_kernel(printed, filename).source_map
    starts = _starts(parsed.source_map)
    keys = [(line, column) for line, column, _ in starts]
    lines = printed.splitlines()
    above = {}  # printed line -> comment lines to put above it
    after = {}  # printed line -> trailing comments
    tail = []
    for c in comments(text):
        if c.own_line:
            i = bisect.bisect_left(keys, (c.line + 1, 0))  # the first node starting after the comment
            target = _printed_line(starts[i][2], printed_map) if i < len(starts) else None
            (above.setdefault(target, []) if target else tail).append(c.text)
        else:
            i = bisect.bisect_left(keys, (c.line, c.column)) - 1  # the last node starting before it
            target = _printed_line(starts[i][2], printed_map) if i >= 0 else None
            (after.setdefault(target, []) if target else tail).append(c.text)
    out = []
    for number, line in enumerate(lines, 1):
        indent = line[: len(line) - len(line.lstrip())]
        out += [indent + c for c in above.get(number, [])]
        out.append(line + "".join("  " + c for c in after.get(number, [])))
    out += tail
    return "\n".join(out) + "\n"
