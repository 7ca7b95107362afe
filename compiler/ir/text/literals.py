"""How scalar values are spelled in the CAKE IR text form: names, strings and floats.

Each spelling here is exact: the parser reads back the very value printed,
bit for bit (negative zero and NaN payloads included).
"""

import math
import struct

from compiler.ir.names import DOTTED_IDENTIFIER, IDENTIFIER
# The quiet NaN Python makes, and its negation: the only NaNs printed as plain words.
_NAN_BITS = 0x7FF8000000000000
_NEG_NAN_BITS = 0xFFF8000000000000
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def is_name(text):
    """Whether `text` is a C identifier (how names of params, regions, ... print unquoted)."""
    return IDENTIFIER.match(text) is not None


def is_symbol(text):
    """Whether `text` is a possibly dotted identifier (how expression symbols print: block.x)."""
    return DOTTED_IDENTIFIER.match(text) is not None


def quote(text):
    """`text` as a double-quoted string; printable Unicode stays as is."""
    out = []
    for char in text:
        escaped = _ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char.isprintable():
            out.append(char)
        else:
            out.append("\\u{%x}" % ord(char))
    return '"' + "".join(out) + '"'


def quote_bytes(data):
    """A bytes value as a string of the characters U+0000..U+00FF (non-ASCII ones as \\xHH)."""
    out = []
    for byte in data:
        char = chr(byte)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 32 <= byte < 127:
            out.append(char)
        else:
            out.append("\\x%02x" % byte)
    return '"' + "".join(out) + '"'


def format_float(value):
    """The shortest text that reads back as exactly `value`; always has a '.', 'e', inf or nan."""
    if math.isnan(value):
        bits = float_bits(value)
        if bits == _NAN_BITS:
            return "nan"
        if bits == _NEG_NAN_BITS:
            return "-nan"
        return "nan(0x%016x)" % bits
    return repr(value)


def float_bits(value):
    """The IEEE binary64 bit pattern of `value`."""
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def float_from_bits(bits):
    """The binary64 value with bit pattern `bits`."""
    return struct.unpack("<d", struct.pack("<Q", bits))[0]
