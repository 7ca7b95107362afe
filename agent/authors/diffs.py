"""Unified diffs against a parent kernel's IR text: how the LLM author's edits become a child's text.

An answer may edit the parent instead of rewriting it: a unified diff (`@@ -a,b +c,d @@` hunks of
context, `-` and `+` lines; `---`/`+++` headers optional). A model's line numbers are often off,
so each hunk is placed by its text: the lines it keeps and removes must appear, in order and
exactly (trailing spaces aside), in the text; of several places the one nearest the hunk's own
line number wins, and hunks apply top to bottom without overlapping. A hunk that fits nowhere is
a DiffError naming it and its first line, which the author sends back once, as a parse error is.
"""

import re

_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


class DiffError(ValueError):
    """The diff does not apply to the parent's text; the message says which hunk and why."""


def is_diff(text):
    """Whether `text` reads as a unified diff (it has a hunk header)."""
    return any(_HUNK.match(line) for line in text.splitlines())


def _hunks(diff):
    """[(stated first line, [(tag, text)])] of a unified diff's hunks; tag is ' ', '-' or '+'."""
    hunks, current = [], None
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if m:
            current = (int(m.group(1)), [])
            hunks.append(current)
        elif current is None or line.startswith(("--- ", "+++ ")):
            continue
        elif line.startswith(("-", "+", " ")):
            current[1].append((line[0], line[1:]))
        elif not line.strip():
            current[1].append((" ", ""))  # an empty context line whose leading space was trimmed
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            raise DiffError("hunk %d: line %r is not context, removal or addition" % (len(hunks), line))
    if not hunks:
        raise DiffError("no @@ hunk header: answer with a unified diff against the parent or the whole kernel")
    return hunks


def _places(lines, before, start):
    """Indices where `before` matches `lines` at or after `start` (trailing whitespace ignored)."""
    want = [b.rstrip() for b in before]
    n = len(want)
    return [i for i in range(start, len(lines) - n + 1) if [l.rstrip() for l in lines[i:i + n]] == want]


def apply(text, diff):
    """`text` with the unified `diff` applied; DiffError when a hunk does not fit."""
    lines = text.splitlines()
    out, pos = [], 0
    for number, (stated, body) in enumerate(_hunks(diff), 1):
        before = [t for tag, t in body if tag != "+"]
        after = [t for tag, t in body if tag != "-"]
        if not before:
            raise DiffError("hunk %d has no context or removed line to place it by" % number)
        places = _places(lines, before, pos)
        if not places:
            raise DiffError("hunk %d does not match the parent's text from its line %d on (its first line: %r)"
                            % (number, pos + 1, before[0]))
        at = min(places, key=lambda i: abs(i + 1 - stated))
        out += lines[pos:at] + after
        pos = at + len(before)
    return "\n".join(out + lines[pos:]) + "\n"
