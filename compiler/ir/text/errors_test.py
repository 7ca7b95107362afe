"""Parse errors: each is a ParseError at the offending token, saying what was expected."""

import pytest

from compiler.ir.text.parse import ParseError, parse_kernel


def error(text):
    with pytest.raises(ParseError) as caught:
        parse_kernel(text, "gemm.cake")
    return caught.value


@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ("kernel k {\n  targt: sm_90a\n}", 2, 3, "unknown field 'targt' in the Kernel block opened at 1:10; did you mean 'target'?"),
        ("kernel k {\n  target: sm_91a\n}", 2, 11, "unknown Target 'sm_91a' for 'target'; did you mean 'sm_90a'?"),
        ("kernel k { target: sm_80\n  target: sm_90a }", 2, 3, "'target' is given twice in this Kernel (first at 1:12)"),
        ("kernel k { role r { warps: 1  warpgroups: 2 } }", 1, 31, "'warps' and 'warpgroups' are both members of oneof 'size' of Role"),
        ("kernel k { role r { body { } } }", 1, 21, "unknown field or op 'body' in the Role block"),
        ("kernel k { role r { loop i in 0 .. 4 { tma_lod {} } } }", 1, 40, "unknown field or op 'tma_lod' in the Loop block opened at 1:38; did you mean 'tma_load'?"),
        ("kernel k { role r { branch { then_body { lop {} } } } }", 1, 42, "unknown op 'lop' in 'then_body' (opened at 1:40); did you mean 'loop'?"),
        ("kernel k { role r { loop i in 0 .. 4 { var: \"j\" } } }", 1, 40, "'var' is given twice in this Loop (first at 1:21)"),
        ("kernel k { param A { name: \"B\" } }", 1, 22, "'name' is given twice in this Param (first at 1:12)"),
        ("kernel k { launch { persistent: 1 } }", 1, 33, "expected true or false for 'persistent', found '1'"),
        ("kernel k { launch { cluster: 2 } }", 1, 30, "expected '[' to start the list 'cluster', found '2'"),
        ("kernel k { launch { cluster: [2, 1.5] } }", 1, 34, "expected an integer for 'cluster', found '1.5'"),
        ("kernel k { launch { cluster: [2 1] } }", 1, 33, "expected ',' or ']' in a list, found '1'"),
        ("kernel k { param A { align_bytes: 4294967296 } }", 1, 35, "4294967296 is out of range for int32"),
        ("kernel k { param A { align_bytes: -99999999999999999999999999999999999999999999 } }", 1, 35, "out of range for int32"),
        ("kernel k { param A { doc: A } }", 1, 27, "expected a quoted string for 'doc', found 'A'"),
        ("kernel k { contract: { } }", 1, 20, "expected '{' to open the Contract block, found ':'"),
        ("kernel k { launch { grid [1] } }", 1, 26, "expected ':' after 'grid', found '['"),
        ("kernel k { contract { tolerance: x } }", 1, 34, "expected a number for 'tolerance', found 'x'"),
        ("kernel k { contract { tolerance: nan(0x1) } }", 1, 38, "expected a NaN bit pattern"),
        ("kernel k { contract { constraint { expr: M + } } }", 1, 46, "expected an expression, found '}'"),
        ("kernel k { contract { constraint { expr: (M + 1 } } }", 1, 49, "expected ')' to close the '(' at 1:42, found '}'"),
        ("kernel k { contract { constraint { expr: min(a) } } }", 1, 47, "expected ',' between the arguments of min, found ')'"),
        ("kernel k { contract { constraint { expr: 99999999999999999999 } } }", 1, 42, "out of range for int64"),
        ("kernel k { role r { tma_load { dst: sA@ } } }", 1, 41, "expected an expression, found '}'"),
        ("kernel k { role r { tma_load { dst: sA[0 +: 1, 1] } } }", 1, 49, "expected '+:' between a window's start and its size, found ']'"),
        ("kernel k { role r { tma_load { barrier: full@kt } } }", 1, 46, "expected 'round' after '@' in a barrier reference"),
        ("kernel k { role r { tma_load { src: \"A\"[0] } } }", 1, 37, "expected an identifier as a tensor name, found string \"A\""),
        ("kernel k { role r { elementwise { srcs: [+] } } }", 1, 42, "expected an operand"),
        ("kernel k { role r { elementwise { srcs: [coord(x)] } } }", 1, 48, "expected an integer as the coordinate axis"),
        ("kernel k { role r { bulk_wait { pending: 1 } } } }", 1, 50, "expected the end of the text after the kernel's '}'"),
        ("kernel k {\n  role r {\n", 3, 1, "expected a field name or '}' in the Role block opened at 2:10, found end of input"),
        ("kernel k { target: \"sm_90a }", 1, 20, "unterminated string"),
        ("kernel k { contract { math: \"\\q\" } }", 1, 30, "unknown escape \\q in string"),
        ("kernel k { contract { math: \"\\u{d800}\" } }", 1, 30, "is not a Unicode scalar value"),
        ("kernel k { target: $ }", 1, 20, "unexpected character '$'"),
        ("kernal k {}", 1, 1, "expected 'kernel' at the start of the text"),
        ("kernel {}", 1, 8, "expected a name (identifier or string) after 'kernel', found '{'"),
        ("", 1, 1, "expected 'kernel' at the start of the text (kernel NAME { ... }), found end of input"),
        ("kernel k { contract { constraint { expr: " + "(" * 200 + "1" + ")" * 200 + " } } }", 1, 143, "expression nested deeper than 100 levels"),
        ("kernel k { contract { constraint { expr: " + " + ".join(["a"] * 60) + " } } }", 1, 244, "expression nested deeper than 100 levels"),
    ],
)
def test_error_location_and_message(text, line, column, message):
    err = error(text)
    assert (err.line, err.column) == (line, column), str(err)
    assert message in err.message
    assert str(err) == "gemm.cake:%d:%d: %s" % (line, column, err.message)


def test_parse_error_is_a_value_error():
    assert issubclass(ParseError, ValueError)


def test_unknown_names_list_the_valid_ones():
    err = error("kernel k { role r { zzz: 1 } }")
    assert "fields: name, kind, warps, warpgroups, registers" in err.message
    assert "ops: " in err.message and "tma_load" in err.message
    err = error("kernel k { target: zzz }")
    assert "expected one of: unspecified, sm_80, sm_90a, sm_100a" in err.message


def test_too_deep_blocks_are_refused():
    deep = "kernel k { role r { " + "loop { " * 60 + "} " * 60 + "} }"
    assert "nested deeper than 100 levels" in error(deep).message
