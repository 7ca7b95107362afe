"""Parsing the CAKE IR text form back into an ir_pb2.Kernel, with the location of every node.

`parse_kernel(text)` reads what text_print writes (and the same text with any
whitespace, comments, or field order) and returns the kernel with a SourceMap:
IR path -> (line, column) where the node's text starts. Anything else raises
ParseError, located at the offending token: unknown names (with the closest
valid one), wrong value types, fields given twice, two members of one oneof.
The grammar is generic over the descriptors (text_schema); the compact forms
(text_compact) read their parts through this parser's small public interface.
"""

import difflib
import math
from typing import NamedTuple

from cake.ir.v1 import ir_pb2
from google.protobuf.descriptor import FieldDescriptor as FD

from compiler.ir import enums, paths
from compiler.ir.text_compact import VALUE_FORMS
from compiler.ir.text_lexer import (
    EOF,
    FLOAT,
    HEX,
    IDENT,
    INT,
    MAX_DEPTH,
    STRING,
    WORD,
    ParseError,
    tokenize,
)
from compiler.ir.text_literals import float_bits, float_from_bits
from compiler.ir.text_schema import (
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

_I32 = (-(1 << 31), (1 << 31) - 1, "int32")
_I64 = (-(1 << 63), (1 << 63) - 1, "int64")
_U32 = (0, (1 << 32) - 1, "uint32")
_U64 = (0, (1 << 64) - 1, "uint64")
_INT_RANGES = {
    FD.TYPE_INT32: _I32, FD.TYPE_SINT32: _I32, FD.TYPE_SFIXED32: _I32,
    FD.TYPE_INT64: _I64, FD.TYPE_SINT64: _I64, FD.TYPE_SFIXED64: _I64,
    FD.TYPE_UINT32: _U32, FD.TYPE_FIXED32: _U32,
    FD.TYPE_UINT64: _U64, FD.TYPE_FIXED64: _U64,
}  # fmt: skip
_FLOAT32_MAX = 3.4028234663852886e38
_SIGN_BIT = 1 << 63
_EXPONENT_BITS = 0x7FF0000000000000


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


class Parser:
    """A cursor over the tokens of one text, and the readers compact forms call back into."""

    def __init__(self, text, filename):
        self.filename = filename
        self.tokens = tokenize(text, filename)
        self.pos = 0
        self.source_map = SourceMap(filename)

    # Tokens.

    def peek(self, ahead=0):
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self):
        token = self.tokens[self.pos]
        if token.kind != EOF:
            self.pos += 1
        return token

    def skip(self, count):
        for _ in range(count):
            self.next()

    def accept(self, text):
        """Consume the next token if its text is `text` (strings never match: theirs is quoted)."""
        return self.next() if self.tokens[self.pos].text == text else None

    def expect(self, text, context):
        token = self.next()
        if token.text != text:
            self.fail(token, "expected '%s' %s, found %s" % (text, context, token.describe()))
        return token

    def fail(self, token, message):
        raise ParseError(self.filename, token.line, token.column, message)

    def record(self, path, token):
        """Note that the node at `path` starts at `token`; fail when nested too deep."""
        if path.count(".") > MAX_DEPTH:
            self.fail(token, "nested deeper than %d levels" % MAX_DEPTH)
        self.source_map[path] = (token.line, token.column)

    def comma_list(self, close, element):
        """Read `element(i)` for i = 0, 1, ... separated by commas, up to the token `close`."""
        if self.accept(close):
            return
        index = 0
        while True:
            element(index)
            index += 1
            token = self.next()
            if token.text == close:
                return
            if token.text != ",":
                self.fail(token, "expected ',' or '%s' in a list, found %s" % (close, token.describe()))

    # Literals.

    def ident(self, what):
        token = self.next()
        if token.kind != IDENT:
            self.fail(token, "expected an identifier %s, found %s" % (what, token.describe()))
        return token.text

    def name(self, what):
        """A name after a keyword: an identifier or a quoted string."""
        token = self.next()
        if token.kind not in (IDENT, STRING):
            self.fail(token, "expected a name (identifier or string) %s, found %s" % (what, token.describe()))
        return token.value

    def int_value(self, start, sign, digits, low, high, type_name):
        """The integer `sign * digits`, which must lie in [low, high]; errors point at `start`."""
        text = digits.text
        # Longer digit strings are out of every range (and int() refuses huge ones).
        value = sign * int(text) if len(text) <= 40 else None
        if value is None or not low <= value <= high:
            shown = ("-" if sign < 0 else "") + (text if len(text) <= 24 else text[:20] + "...")
            self.fail(start, "%s is out of range for %s [%d, %d]" % (shown, type_name, low, high))
        return value

    def signed_int(self, low, high, type_name, what):
        start = digits = self.next()
        sign = 1
        if start.text == "-":
            sign, digits = -1, self.next()
        if digits.kind != INT:
            self.fail(digits, "expected an integer %s, found %s" % (what, digits.describe()))
        return self.int_value(start, sign, digits, low, high, type_name)

    def float_literal(self, what):
        token = self.next()
        negative = token.text == "-"
        if negative:
            token = self.next()
        if token.kind in (FLOAT, INT):
            value = float(token.text)
        elif token.text == "inf":
            value = math.inf
        elif token.text == "nan":
            value = self._nan_payload() if self.accept("(") else math.nan
        else:
            self.fail(token, "expected a number %s, found %s" % (what, token.describe()))
        # Negate through the bits so NaN signs are exact too.
        return float_from_bits(float_bits(value) ^ _SIGN_BIT) if negative else value

    def _nan_payload(self):
        token = self.next()
        bits = int(token.text, 16) if token.kind == HEX and len(token.text) <= 18 else None
        if bits is None or bits & _EXPONENT_BITS != _EXPONENT_BITS or bits & ~(_SIGN_BIT | _EXPONENT_BITS) == 0:
            self.fail(token, "expected a NaN bit pattern (0x7ff0000000000001 ...), found %s" % token.describe())
        self.expect(")", "after the NaN bit pattern")
        return float_from_bits(bits)

    def scalar(self, field):
        """A value for the scalar (or enum) field `field`."""
        kind = field.type
        what = "for '%s'" % field.name
        int_range = _INT_RANGES.get(kind)
        if int_range is not None:
            return self.signed_int(*int_range, what)
        if kind == FD.TYPE_ENUM:
            return self._enum(field)
        if kind in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            start = self.peek()
            value = self.float_literal(what)
            if kind == FD.TYPE_FLOAT and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
                self.fail(start, "%r is out of range for float" % value)
            return value
        token = self.next()
        if kind == FD.TYPE_BOOL:
            if token.text not in ("true", "false"):
                self.fail(token, "expected true or false %s, found %s" % (what, token.describe()))
            return token.text == "true"
        if token.kind != STRING:
            self.fail(token, "expected a quoted string %s, found %s" % (what, token.describe()))
        if kind == FD.TYPE_BYTES:
            try:
                return token.value.encode("latin-1")
            except UnicodeEncodeError:
                self.fail(token, "a bytes value holds characters up to \\xff only")
        return token.value

    def _enum(self, field):
        token = self.peek()
        if token.kind == INT or token.text == "-":
            return self.signed_int(*_I32, "for '%s'" % field.name)
        self.next()
        if token.kind in (IDENT, WORD):
            try:
                return enums.value_of(field.enum_type, token.text)
            except ValueError:
                pass
        names = enums.short_names(field.enum_type)
        self.fail(
            token,
            "unknown %s %s for '%s'%s; expected one of: %s"
            % (field.enum_type.name, token.describe(), field.name, _suggest(token.text, names), ", ".join(names)),
        )

    # Blocks.

    def kernel(self):
        start = self.expect(paths.ROOT, "at the start of the text (kernel NAME { ... })")
        kernel = ir_pb2.Kernel()
        self.record(paths.ROOT, start)
        kernel.name = self.name("after 'kernel'")
        self.block(kernel, paths.ROOT, {"name": start})
        end = self.peek()
        if end.kind != EOF:
            self.fail(end, "expected the end of the text after the kernel's '}', found %s" % end.describe())
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
        """`{ items }` into `message`; `given` maps fields already read (a header, a name) to their token."""
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
                self._op(getattr(message, syn.ops.name), paths.join(path, syn.ops.name))
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
            ops, ops_path = getattr(message, fs.name), paths.join(path, fs.name)
            while not self.accept("}"):
                op = self.peek()
                if op.text != "{" and op.text not in OP_KEYWORDS:
                    self._not_an_op(op, fs.name, opened)
                self._op(ops, ops_path)
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
                elif kind == VALUES:
                    self.comma_list("]", lambda i: self.value(items.add(), paths.join(path, fs.name, i)))

    def _message_block(self, message, path, fs, token, given):
        if fs.header is not None and self.peek().text != "{":
            fs.header.parse(self, message, path)
            given.update(dict.fromkeys(fs.header.fields, token))
        self.block(message, path, given)

    def _op(self, ops, list_path):
        token = self.peek()
        op = ops.add()
        op_path = "%s[%d]" % (list_path, len(ops) - 1)
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
                "'%s' is given twice in this %s (first at %d:%d)" % (fs.name, syn.name, first.line, first.column),
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
            "unknown op '%s' in %s%s (ops: %s)"
            % (token.text, where, _suggest(token.text, ops), ", ".join(ops)),
        )

    def _unexpected(self, token, syn, opened):
        where = "the %s block opened at %d:%d" % (syn.name, opened.line, opened.column)
        if token.kind != IDENT:
            self.fail(token, "expected a field name or '}' in %s, found %s" % (where, token.describe()))
        names = list(syn.by_keyword) + sorted(syn.op_keywords)
        what = "field or op" if syn.op_keywords else "field"
        valid = "fields: %s" % ", ".join(syn.by_keyword) if syn.by_keyword else "no fields"
        if syn.op_keywords:
            valid += "; ops: %s" % ", ".join(sorted(syn.op_keywords))
        self.fail(
            token,
            "unknown %s '%s' in %s%s (%s)" % (what, token.text, where, _suggest(token.text, names), valid),
        )


def _suggest(word, names):
    close = difflib.get_close_matches(word, names, n=1)
    return "; did you mean '%s'?" % close[0] if close else ""
