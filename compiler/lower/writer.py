"""An indenting line writer for generated C++."""

import contextlib


class Writer:
    def __init__(self):
        self.lines = []
        self.depth = 0

    def line(self, text=""):
        self.lines.append(("  " * self.depth + text) if text else "")

    def comment(self, text):
        self.line("// " + text)

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
