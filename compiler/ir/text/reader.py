"""A cursor over the tokens of one CAKE IR text, and readers of literals with located ParseErrors.

The parser (parse.py) builds on it, and compact forms (compact.py, infix.py)
read their parts through it: peek/next/accept/expect to move, fail to report,
and ident, name, signed_int, float_literal and scalar to read values. Every
reader checks ranges itself, so no bad input reaches protobuf as an exception.
"""

import difflib
import itertools
import math

from google.protobuf.descriptor import FieldDescriptor as FD

from compiler.ir import enums
from compiler.ir.descriptors import INT32, INT_RANGES
from compiler.ir.text.lexer import EOF, FLOAT, HEX, IDENT, INT, STRING, WORD, ParseError, iter_tokens
from compiler.ir.text.literals import float_bits, float_from_bits

_FLOAT32_MAX = 3.4028234663852886e38
_SIGN_BIT = 1 << 63
_EXPONENT_BITS = 0x7FF0000000000000
# Longer digit strings are out of every integer range (and int() refuses huge ones).
_MAX_DIGITS = 40
# Tokens lexed at a time: an error near the start of a long text costs one chunk, not the whole text.
_CHUNK = 256


class TokenReader:
    """The tokens of `text` and a position in them."""

    def __init__(self, text, filename):
        self.filename = filename
        self.tokens = []  # lexed so far, CHUNK at a time as the parser reaches them
        self.pos = 0
        self._stream = iter_tokens(text, filename)
        self._ended = False  # the stream gave its EOF token

    def _lex_to(self, index):
        while index >= len(self.tokens) and not self._ended:
            self.tokens.extend(itertools.islice(self._stream, _CHUNK))
            self._ended = self.tokens[-1].kind == EOF

    def peek(self, ahead=0):
        """The token `ahead` places on (EOF past the end)."""
        index = self.pos + ahead
        if index >= len(self.tokens):
            self._lex_to(index)
        return self.tokens[min(index, len(self.tokens) - 1)]

    def next(self):
        token = self.peek()
        if token.kind != EOF:
            self.pos += 1
        return token

    def skip(self, count):
        for _ in range(count):
            self.next()

    def accept(self, text):
        """Consume the next token if its text is `text` (never a string: a string's text is quoted)."""
        return self.next() if self.peek().text == text else None

    def expect(self, text, context):
        token = self.next()
        if token.text != text:
            self.fail(token, "expected '%s' %s, found %s" % (text, context, token.describe()))
        return token

    def fail(self, token, message):
        raise ParseError(self.filename, token.line, token.column, message)

    def comma_list(self, close, element):
        """Call `element(i)` for each item of a comma-separated list ending with `close`."""
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
                found = token.describe()
                self.fail(token, "expected ',' or '%s' in a list, found %s" % (close, found))

    def ident(self, what):
        token = self.next()
        if token.kind != IDENT:
            self.fail(token, "expected an identifier %s, found %s" % (what, token.describe()))
        return token.text

    def name(self, what):
        """A name after a keyword: an identifier or a quoted string."""
        token = self.next()
        if token.kind not in (IDENT, STRING):
            found = token.describe()
            self.fail(token, "expected a name (identifier or string) %s, found %s" % (what, found))
        return token.value

    def int_value(self, start, sign, digits, low, high, type_name):
        """The integer `sign * digits`, which must lie in [low, high]; errors point at `start`."""
        text = digits.text
        value = sign * int(text) if len(text) <= _MAX_DIGITS else None
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
        # Negate through the bits so that NaN signs are exact too.
        return float_from_bits(float_bits(value) ^ _SIGN_BIT) if negative else value

    def _nan_payload(self):
        token = self.next()
        bits = int(token.text, 16) if token.kind == HEX and len(token.text) <= 18 else None
        payload = None if bits is None else bits & ~(_SIGN_BIT | _EXPONENT_BITS)
        if not payload or bits & _EXPONENT_BITS != _EXPONENT_BITS:
            self.fail(
                token,
                "expected a NaN bit pattern (0x7ff0000000000001 ...), found %s" % token.describe(),
            )
        self.expect(")", "after the NaN bit pattern")
        return float_from_bits(bits)

    def scalar(self, field):
        """A value for the scalar or enum field `field`."""
        kind = field.type
        what = "for '%s'" % field.name
        int_range = INT_RANGES.get(kind)
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
            return self.signed_int(*INT32, "for '%s'" % field.name)
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
            % (
                field.enum_type.name,
                token.describe(),
                field.name,
                suggest(token.text, names),
                ", ".join(names),
            ),
        )


# Longer words are no typo of a name: no suggestion (difflib's cost grows with the word's length).
_SUGGEST_CHARS = 64


def suggest(word, names):
    """'; did you mean X?' for the name closest to `word`, or '' when none is close."""
    if len(word) > _SUGGEST_CHARS:
        return ""
    close = difflib.get_close_matches(word, names, n=1)
    return "; did you mean '%s'?" % close[0] if close else ""
