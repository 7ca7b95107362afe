"""Tokens of the CAKE IR text form, and the one error type its parser raises.

The lexer turns text into `Token`s (a list, or a stream the parser pulls from) with 1-based line:column positions.
It knows nothing about the IR: a word is a word, and whether `bf16` is an enum
value or a symbol is for the parser to decide from context.
"""

import re

# Parsing stops here: upb refuses to decode messages nested deeper than about 100
# levels, so text nested deeper could not describe a kernel protobuf accepts, and
# the bound keeps Python's own recursion limit out of reach.
MAX_DEPTH = 100

IDENT = "ident"  # a C identifier, possibly dotted: block.x
WORD = "word"  # digits then letters: the enum value 128b
INT = "int"  # decimal digits (a sign is its own token)
HEX = "hex"  # 0x digits: only in nan(0x...) bit patterns
FLOAT = "float"  # digits with a fraction or an exponent
STRING = "string"  # double-quoted, escapes decoded
PUNCT = "punct"
EOF = "eof"

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\n]+|\#[^\n]*)
  | (?P<float>[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)(?![A-Za-z0-9_.]))
  | (?P<hex>0[xX][0-9a-fA-F]+(?![A-Za-z0-9_]))
  | (?P<word>[A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*")
  | (?P<punct>\+:|\.\.|==|!=|<=|>=|&&|\|\||[{}\[\]():,@+\-*/%<>])
    """,
    re.VERBOSE,
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_KINDS = {"float": FLOAT, "hex": HEX, "punct": PUNCT}
_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F]{1,6})\}|x([0-9a-fA-F]{2})|(.))")
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_KNOWN_ESCAPES = r'\\, \", \n, \t, \r, \xHH or \u{HHHH}'


class ParseError(ValueError):
    """Text that is not CAKE IR; `line` and `column` are 1-based."""

    def __init__(self, filename, line, column, message):
        super().__init__("%s:%d:%d: %s" % (filename, line, column, message))
        self.filename = filename
        self.line = line
        self.column = column
        self.message = message


class Token:
    """One token: its kind, its text as written, its decoded value and where it starts."""

    __slots__ = ("kind", "text", "value", "line", "column")

    def __init__(self, kind, text, value, line, column):
        self.kind = kind
        self.text = text
        self.value = value
        self.line = line
        self.column = column

    def describe(self):
        """How an error message names this token."""
        if self.kind == EOF:
            return "end of input"
        text = self.text if len(self.text) <= 24 else self.text[:20] + "..."
        if self.kind == STRING:
            return "string %s" % (text if text.endswith('"') else text + '"')
        return "'%s'" % text

    def __repr__(self):
        return "Token(%s %r @%d:%d)" % (self.kind, self.text, self.line, self.column)


def tokenize(text, filename="<text>"):
    """The tokens of `text`, then an EOF token; ParseError where no token can start."""
    return list(iter_tokens(text, filename))


def iter_tokens(text, filename="<text>"):
    """`tokenize` as a generator: the parser reads tokens as it needs them, so an error near
    the start of a long text is found without lexing the rest (and without holding its tokens)."""
    _check_unicode(text, filename)
    line, line_start, pos, end = 1, 0, 0, len(text)
    match = _TOKEN.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            _raise_bad_character(text, pos, filename, line, pos - line_start + 1)
        kind = m.lastgroup
        token_text = m.group()
        if kind == "space":
            newlines = token_text.count("\n")
            if newlines:
                line += newlines
                line_start = pos + token_text.rindex("\n") + 1
        else:
            column = pos - line_start + 1
            yield Token(*_classify(kind, token_text, filename, line, column), line, column)
        pos = m.end()
    yield Token(EOF, "", None, line, end - line_start + 1)


def _check_unicode(text, filename):
    # A lone surrogate (bytes decoded with surrogateescape) cannot be stored in a proto string.
    # Searched for rather than found by encoding, which would copy the whole text.
    found = None if text.isascii() else _SURROGATE.search(text)
    if found is not None:
        start = found.start()
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        message = "lone surrogate U+%04X is not Unicode text" % ord(text[start])
        raise ParseError(filename, line, column, message)


def _classify(kind, text, filename, line, column):
    if kind == "word":
        if text.isdigit():
            return INT, text, text
        return (WORD if text[0].isdigit() else IDENT), text, text
    if kind == "string":
        return STRING, text, _unescape(text, filename, line, column)
    return _KINDS[kind], text, text


def _unescape(quoted, filename, line, column):
    def decode(m):
        code_hex = m.group(1) or m.group(2)
        if code_hex is not None:
            code = int(code_hex, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                message = "escape %s is not a Unicode scalar value" % m.group()
                raise ParseError(filename, line, column + 1 + m.start(), message)
            return chr(code)
        simple = _SIMPLE_ESCAPES.get(m.group(3))
        if simple is None:
            message = "unknown escape %s in string (use %s)" % (m.group(), _KNOWN_ESCAPES)
            raise ParseError(filename, line, column + 1 + m.start(), message)
        return simple

    body = quoted[1:-1]
    return _ESCAPE.sub(decode, body) if "\\" in body else body


def _raise_bad_character(text, pos, filename, line, column):
    char = text[pos]
    if char == '"':
        raise ParseError(filename, line, column, "unterminated string (a string ends on its line)")
    raise ParseError(filename, line, column, "unexpected character %r" % char)
