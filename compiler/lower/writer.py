"""An indenting line writer for generated C++.

Lines stay under WIDTH characters where C++ allows a break: a longer statement is broken
inside its outermost brackets that hold two or more arguments (after each comma) or
conditions (before each `&&` or `||`), else terms (before each ` + `), one per line, indented two steps more than the
statement (recursively, for a part that is itself too long); a statement with an
assignment or a conditional outside all brackets breaks first after its ` = ` and before
its ` ? ` and ` : `. Comments, preprocessor lines and lines holding string or character literals
are kept whole.
"""

import contextlib

WIDTH = 120
INDENT = "  "
_OPEN, _CLOSE = "([{", ")]}"


class Writer:
    def __init__(self):
        self.lines = []
        self.depth = 0

    def line(self, text=""):
        if not text:
            self.lines.append("")
            return
        self.lines.extend(wrap(INDENT * self.depth, text))

    def comment(self, text):
        self.lines.append(INDENT * self.depth + "// " + text)

    @contextlib.contextmanager
    def block(self, header):
        """`header {` ... `}` with the body indented."""
        self.line(header + " {" if header else "{")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line("}")

    def text(self):
        return "\n".join(self.lines) + "\n"


def wrap(indent, text):
    """`text` at `indent` as lines under WIDTH where it can be broken (see the module doc)."""
    if len(indent) + len(text) <= WIDTH or text.lstrip().startswith(("//", "#")) or '"' in text or "'" in text:
        return [indent + text]
    code, sep, comment = text.partition("//")
    code, comment = code.rstrip(), sep + comment
    pieces = _top_level_pieces(code)
    if len(pieces) > 1:
        out = wrap(indent, pieces[0])
        for piece in pieces[1:]:
            out.extend(wrap(indent + INDENT * 2, piece))
    else:
        split = _split(code)
        if split is None:
            return [indent + text]
        head, parts, tail = split
        out = [indent + head]
        for part in parts:
            out.extend(wrap(indent + INDENT * 2, part))
        out.extend(wrap(indent, tail))
    if comment:
        out[-1] += " " + comment
    return out


def _top_level_pieces(code):
    """`code` cut after its top-level ` = ` and before its top-level ` ? ` and ` : ` (outside every bracket)."""
    depth, cuts = 0, []
    for i, move in enumerate(_brackets(code)):
        depth = max(0, depth + move)  # a tail starts with the brackets it closes
        if depth == 0 and move == 0 and code.startswith((" = ", " ? ", " : "), i):
            cuts.append(i + (3 if code.startswith(" = ", i) else 1))
    return [code[a:b].strip() for a, b in zip([0] + cuts, cuts + [len(code)])]


def _brackets(code):
    """(index, +1 opening / -1 closing / 0) per character: (), [], {} and template <> (a `<` glued to a name, a
    `>` glued to what it closes; comparisons and shifts are written with spaces around them)."""
    out, angles = [], 0
    for i, ch in enumerate(code):
        before, after = code[i - 1] if i else " ", code[i + 1] if i + 1 < len(code) else " "
        if ch in _OPEN or (ch == "<" and (before.isalnum() or before in "_:") and after not in "<="):
            angles += ch == "<"
            out.append(1)
        elif ch in _CLOSE or (ch == ">" and angles and before not in " -"):
            angles -= ch == ">"
            out.append(-1)
        else:
            out.append(0)
    return out


def _split(code):
    """(head through an opening bracket, [parts], its closing bracket and the rest): the widest bracket pair
    (not a template's) holding two or more arguments or conditions, outermost first; None if there is none."""
    depth, start, pairs = 0, None, []
    for i, move in enumerate(_brackets(code)):
        if move > 0:
            if depth == 0:
                start = i
            depth += 1
        elif move < 0:
            if depth == 0:  # a tail starts with the brackets it closes
                continue
            depth -= 1
            if depth == 0 and code[start] != "<":
                pairs.append((i - start, start, i))
    for _, start, end in sorted(pairs, reverse=True):
        parts = _parts(code[start + 1:end])
        if len(parts) >= 2:
            return code[:start + 1], parts, code[end:]
    for _, start, end in sorted(pairs, reverse=True):
        inner = _split(code[start + 1:end])
        if inner is not None:
            head, parts, tail = inner
            return code[:start + 1] + head, parts, tail + code[end:]
    return None


def _parts(inner):
    """`inner` as lines: split after its top-level commas, else before its top-level `&&` / `||`, else
    before its top-level ` + `."""
    commas, logic, sums, depth = [], [], [], 0
    for i, move in enumerate(_brackets(inner)):
        depth += move
        if depth == 0 and move == 0 and inner[i] == ",":
            commas.append(i)
        elif depth == 0 and move == 0 and inner.startswith((" && ", " || "), i):
            logic.append(i)
        elif depth == 0 and move == 0 and inner.startswith(" + ", i):
            sums.append(i)
    parts, last = [], 0
    for at in commas or logic or sums:
        parts.append(inner[last:at + 1 if commas else at].strip())
        last = at + 1
    parts.append(inner[last:].strip())
    return [p for p in parts if p]
