"""Generated CUDA a person can read: constants folded, no constant conditionals, statements broken under the
line width, the IR path above every op."""

import pytest

from compiler.corpus import corpus
from compiler.ir.expr import E, as_expr
from compiler.lower import lower
from compiler.lower.cexpr import cexpr
from compiler.lower.writer import WIDTH, wrap

X, Y = E.sym("x"), E.sym("y")


@pytest.mark.parametrize("expr, want", [
    (X + 0, "v_x"), (0 + X, "v_x"), (X - 0, "v_x"), (X * 1, "v_x"), (1 * X, "v_x"), (X // 1, "v_x"),
    (X * 0 + (2 * E(as_expr(64)) + 1), "((v_x * 0) + 129)"),  # x * 0 stays: only constants fold
    ((X + 0) * (Y * 1) + (E(as_expr(3)) - 3), "(v_x * v_y)"),
    ((X * 0 + 5) // 2 - E(as_expr(7)) // 2, "((((v_x * 0) + 5) / 2) - 3)"),
])
def test_constants_fold_and_identities_drop(expr, want):
    assert cexpr(expr.proto, {"x": True, "y": True}) == want


def test_folding_keeps_the_irs_floor_semantics():
    minus7 = E(as_expr(-7))
    assert cexpr((minus7 // 2).proto, {}) == "-4" and cexpr((minus7 % 2).proto, {}) == "1"
    assert cexpr((E(as_expr(1 << 20)) * (1 << 20)).proto, {}) == "1099511627776LL"  # no int overflow either


def test_a_long_call_breaks_after_its_commas_and_keeps_every_token():
    text = ("cake::tma::load<2>(cake_smem + ((v_kt % 4)) * 16384, &tmap_A_0, (bar_full + (v_kt) % 4), "
            "{int((v_kt * 64)), int((" + " + ".join(["int(blockIdx.y) * 128"] * 4) + "))});")
    lines = wrap("    ", text)
    assert len(lines) > 1 and all(len(line) <= WIDTH for line in lines), lines
    assert lines[0] == "    cake::tma::load<2>(" and lines[-1] == "    );"
    assert "".join("".join(lines).split()) == "".join(text.split())


def test_template_arguments_comments_and_literals_stay_whole():
    call = "f(%s, cake::smem::at<cake::bf16, 128, 32, 64>(base, r, c)) // %s" % ("a" * 70, "x, " * 20)
    lines = wrap("", call)
    assert "cake::smem::at<cake::bf16, 128, 32, 64>(base, r, c)" in lines[2] and lines[-1].endswith("x, " * 19 + "x, ")
    literal = 'printf("' + "%d, " * 30 + '", ' + "a" * 60 + ");"
    assert wrap("", literal) == [literal]
    assert wrap("", "// " + "y, " * 50) == ["// " + "y, " * 50]


def test_conditions_break_before_their_ands_and_assignments_after_the_equals():
    cond = " && ".join("((int(blockIdx.y) * 128) + (r%d)) < (v_M)" % i for i in range(4))
    lines = wrap("", "if (%s) {" % cond)
    assert lines[0] == "if (" and lines[-1] == ") {" and [line.lstrip()[:2] for line in lines[2:-1]] == ["&&"] * 3
    lines = wrap("", "v_y[%s] = cake::convert<cake::bf16>(r_acc.d[i]);" % " + ".join(["(long long)v_n"] * 8))
    assert lines[-2] == "] =" and lines[-1].strip() == "cake::convert<cake::bf16>(r_acc.d[i]);", lines
    assert [line.strip()[:2] for line in lines[2:-2]] == ["+ "] * 7 and all(len(line) <= WIDTH for line in lines)


@pytest.fixture(scope="module")
def sources():
    return {name: lower(corpus.build(name)).source for name in corpus.GOOD}


def test_the_corpus_lowers_without_constant_conditionals_or_zero_offsets(sources):
    for name, src in sources.items():
        assert "(0) ? 1 : 0" not in src and "(1) ? 1 : 0" not in src, name
        assert "cake_smem + 0 " not in src and "cake_smem + 0)" not in src, name


def test_every_op_keeps_its_ir_path_above_it(sources):
    for name, src in sources.items():
        lines = src.splitlines()
        paths = [i for i, line in enumerate(lines) if line.strip().startswith("// kernel.roles[")]
        assert paths and all(not lines[i + 1].strip().startswith("// kernel.roles[") or
                             lines[i + 1].strip().startswith(lines[i].strip()) for i in paths), name
