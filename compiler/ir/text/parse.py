"""Parsing the CAKE IR text form back into an ir_pb2.Kernel, with the location of every node.

`parse_kernel(text)` reads what printer.py writes (and the same text with any
whitespace, comments, or field order) and returns the kernel with a SourceMap:
IR path -> (line, column) where the node's text starts. Anything else raises
ParseError, located at the offending token: unknown names (with the closest
valid one), wrong value types, fields given twice, two members of one oneof.
The grammar is generic over the descriptors (schema.py); the compact forms
(compact.py) read their parts through this parser's small public interface.
"""

from typing import NamedTuple

from cake.ir.v1 import ir_pb2

from compiler.ir import paths
from compiler.ir.text.compact import VALUE_FORMS
from compiler.ir.text.lexer import EOF, IDENT, MAX_DEPTH, ParseError
from compiler.ir.text.reader import TokenReader, suggest
from compiler.ir.text.schema import (
    BLOCK,
    ENTRIES,
    OP_KEYWORDS,
    OPS,
    SCALAR,
    SCALARS,
    VALUE,
    VALUES,
    syntax,
)

__all__ = ["ParseError", "ParsedKernel", "SourceMap", "parse_kernel"]


class SourceMap(dict):
    """IR path -> (line, column), 1-based, of where that node's text starts in `filename`."""

    def __init__(self, filename):
        super().__init__()
        self.filename = filename

    def lookup(self, path):
        """The location of `path`, else of its nearest ancestor that has one; None if none has."""
        while path is not None:
            location = self.get(path)
            if location is not None:
                return location
            path = paths.parent(path)
        return None


class ParsedKernel(NamedTuple):
    kernel: ir_pb2.Kernel
    source_map: SourceMap


def parse_kernel(text, filename="<text>"):
    """Parse `text` (one `kernel NAME { ... }`); ParseError if it is not CAKE IR text."""
    parser = Parser(text, filename)
    return ParsedKernel(parser.kernel(), parser.source_map)


class Parser(TokenReader):
    """The grammar of blocks, fields and op lists over a TokenReader, recording node locations."""

    def __init__(self, text, filename):
        super().__init__(text, filename)
        self.source_map = SourceMap(filename)

    def record(self, path, token):
        """Note that the node at `path` starts at `token`; fail when nested too deep."""
        if path.count(".") > MAX_DEPTH:
            self.fail(token, "nested deeper than %d levels" % MAX_DEPTH)
        self.source_map[path] = (token.line, token.column)

    # Blocks.

    def kernel(self):
        start = self.expect(paths.ROOT, "at the start of the text (kernel NAME { ... })")
        kernel = ir_pb2.Kernel()
        self.record(paths.ROOT, start)
        kernel.name = self.name("after 'kernel'")
        self.block(kernel, paths.ROOT, {"name": start})
        end = self.peek()
        if end.kind != EOF:
            found = end.describe()
            self.fail(end, "expected the end of the text after the kernel's '}', found %s" % found)
        return kernel

    def value(self, message, path):
        """A value-form message: its compact form, or its generic `{ ... }` block."""
        token = self.peek()
        if token.text == "{":
            self.record(path, token)
            self.block(message, path)
        else:
            VALUE_FORMS[message.DESCRIPTOR.full_name].parse(self, message, path)

    def block(self, message, path, given=None):
        """`{ items }` into `message`; `given` maps fields read already (header, name) to a token."""
        opened = self.expect("{", "to open the %s block" % message.DESCRIPTOR.name)
        message.SetInParent()
        syn = syntax(message.DESCRIPTOR)
        given = {} if given is None else given
        chosen = {}  # oneof name -> the member given
        while True:
            token = self.peek()
            if token.text == "}":
                self.next()
                return
            if token.kind == IDENT and token.text in syn.by_keyword:
                self.next()
                self._field(message, syn, syn.by_keyword[token.text], path, token, given, chosen)
            elif syn.ops is not None and (token.text in syn.op_keywords or token.text == "{"):
                self._op(message, syn.ops.name, path)
            else:
                self._unexpected(token, syn, opened)

    def _field(self, message, syn, fs, path, token, given, chosen):
        kind = fs.kind
        if kind == ENTRIES:
            entries = getattr(message, fs.name)
            entry = entries.add()
            entry_path = paths.join(path, fs.name, len(entries) - 1)
            self.record(entry_path, token)
            entry_given = {}
            if fs.named:
                entry.name = self.name("after '%s'" % fs.keyword)
                entry_given["name"] = token
            self._message_block(entry, entry_path, fs, token, entry_given)
            return
        self._claim(syn, fs, token, given, chosen)
        if kind == BLOCK:
            child_path = paths.join(path, fs.name)
            self.record(child_path, token)
            self._message_block(getattr(message, fs.name), child_path, fs, token, {})
        elif kind == OPS:
            opened = self.expect("{", "after '%s'" % fs.name)
            while not self.accept("}"):
                op = self.peek()
                if op.text != "{" and op.text not in OP_KEYWORDS:
                    self._not_an_op(op, fs.name, opened)
                self._op(message, fs.name, path)
        else:
            self.expect(":", "after '%s'" % fs.name)
            if kind == SCALAR:
                setattr(message, fs.name, self.scalar(fs.field))
            elif kind == VALUE:
                self.value(getattr(message, fs.name), paths.join(path, fs.name))
            else:
                self.expect("[", "to start the list '%s'" % fs.name)
                items = getattr(message, fs.name)
                if kind == SCALARS:
                    self.comma_list("]", lambda i: items.append(self.scalar(fs.field)))
                else:
                    name = fs.name
                    self.comma_list("]", lambda i: self.value(items.add(), paths.join(path, name, i)))

    def _message_block(self, message, path, fs, token, given):
        if fs.header is not None and self.peek().text != "{":
            fs.header.parse(self, message, path)
            given.update(dict.fromkeys(fs.header.fields, token))
        self.block(message, path, given)

    def _op(self, message, list_name, path):
        """One op item, appended to the op list `list_name` of `message` (at `path`)."""
        token = self.peek()
        ops = getattr(message, list_name)
        op = ops.add()
        op_path = paths.join(path, list_name, len(ops) - 1)
        self.record(op_path, token)
        if token.text == "{":
            self.block(op, op_path)
            return
        self.next()
        syn = syntax(op.DESCRIPTOR)
        self._field(op, syn, syn.by_keyword[token.text], op_path, token, {}, {})

    def _claim(self, syn, fs, token, given, chosen):
        first = given.get(fs.name)
        if first is not None:
            self.fail(
                token,
                "'%s' is given twice in this %s (first at %d:%d)"
                % (fs.name, syn.name, first.line, first.column),
            )
        given[fs.name] = token
        if fs.oneof is not None:
            other = chosen.setdefault(fs.oneof, fs.name)
            if other != fs.name:
                self.fail(
                    token,
                    "'%s' and '%s' are both members of oneof '%s' of %s; give only one"
                    % (other, fs.name, fs.oneof, syn.name),
                )

    def _not_an_op(self, token, list_name, opened):
        where = "'%s' (opened at %d:%d)" % (list_name, opened.line, opened.column)
        if token.kind != IDENT:
            self.fail(token, "expected an op or '}' in %s, found %s" % (where, token.describe()))
        ops = sorted(OP_KEYWORDS)
        self.fail(
            token,
            "unknown op %s in %s%s (ops: %s)"
            % (token.describe(), where, suggest(token.text, ops), ", ".join(ops)),
        )

    def _unexpected(self, token, syn, opened):
        where = "the %s block opened at %d:%d" % (syn.name, opened.line, opened.column)
        if token.kind != IDENT:
            found = token.describe()
            self.fail(token, "expected a field name or '}' in %s, found %s" % (where, found))
        names = list(syn.by_keyword) + sorted(syn.op_keywords)
        what = "field or op" if syn.op_keywords else "field"
        valid = "fields: %s" % ", ".join(syn.by_keyword) if syn.by_keyword else "no fields"
        if syn.op_keywords:
            valid += "; ops: %s" % ", ".join(sorted(syn.op_keywords))
        self.fail(
            token,
            "unknown %s %s in %s%s (%s)"
            % (what, token.describe(), where, suggest(token.text, names), valid),
        )
