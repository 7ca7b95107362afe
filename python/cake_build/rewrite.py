"""Absolute imports of the monorepo's packages, moved under `cake.`: the wheel's one rewrite rule.

In the monorepo, compiler/, runtime/ and kernels/ are top-level packages; the wheel
installs them as cake.compiler, cake.runtime and cake.kernels, so that nothing generic
lands in site-packages. Their source stays the one truth: the wheel build rewrites
each module's import statements, and only those:

    from compiler.build import driver      ->  from cake.compiler.build import driver
    import runtime.loader as loader        ->  import cake.runtime.loader as loader

An `import compiler.x` without `as` would bind the name `compiler`, which the wheel
does not have, so it is refused (write `from compiler import x`), as is a relative
import reaching above a package. Strings are left alone: names of functions that
cross into workers ("runtime.evaluate:run") are resolved by runtime/names.py in either
layout, and IR fields such as a contract's reference name are data. The rewrite is a
pure function of the text, so the same source always gives the same wheel.
"""

import ast
import re

PREFIX = "cake"


class RewriteError(ValueError):
    """An import the rewrite cannot carry into the wheel; the message names file, line and the fix."""


def _root(name):
    return name.split(".")[0] if name else ""


def rewrite(source, packages, filename="<source>"):
    """`source` with every absolute import of `packages` moved under `cake.`."""
    tree = ast.parse(source, filename)
    lines = source.splitlines(True)
    edits = []  # (line index, start column, old text, new text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _root(node.module) in packages:
            edits.append((node.lineno - 1, node.col_offset, "from", node.module))
        elif isinstance(node, ast.Import):
            ours = [a for a in node.names if _root(a.name) in packages]
            if not ours:
                continue
            if len(node.names) > 1 or ours[0].asname is None:
                raise RewriteError("%s:%d: `import %s` binds a top-level name the wheel does not have; write "
                                   "`from %s import ...` or `import ... as ...`"
                                   % (filename, node.lineno, ", ".join(a.name for a in node.names), ours[0].name))
            edits.append((node.lineno - 1, node.col_offset, "import", ours[0].name))
    for index, column, keyword, module in sorted(edits, reverse=True):
        line = lines[index]
        pattern = re.compile(r"%s\s+(%s)\b" % (keyword, re.escape(module)))
        m = pattern.match(line, column)
        if not m:
            raise RewriteError("%s:%d: cannot find `%s %s` where the parser put it" % (filename, index + 1, keyword, module))
        lines[index] = line[:m.start(1)] + PREFIX + "." + module + line[m.end(1):]
    return "".join(lines)
