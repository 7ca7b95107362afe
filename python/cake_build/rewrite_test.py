"""The wheel's import rewrite: exact on every import form the monorepo uses, loud on the ones it cannot carry."""

import pytest

from cake_build.rewrite import RewriteError, rewrite

PACKAGES = ("compiler", "runtime", "kernels")


def test_from_imports_move_under_cake_at_any_depth_and_indentation():
    src = ("from compiler.build import driver\n"
           "from compiler import analysis, verify  # two\n"
           "def f():\n"
           "    from runtime.check import (\n"
           "        check_kernel,\n"
           "    )\n"
           "    import kernels.kmeans.api as api\n"
           "x = 1; from kernels import gemm\n")
    assert rewrite(src, PACKAGES) == (
        "from cake.compiler.build import driver\n"
        "from cake.compiler import analysis, verify  # two\n"
        "def f():\n"
        "    from cake.runtime.check import (\n"
        "        check_kernel,\n"
        "    )\n"
        "    import cake.kernels.kmeans.api as api\n"
        "x = 1; from cake.kernels import gemm\n")


def test_everything_else_is_left_alone():
    src = ('from cake.ir.v1 import ir_pb2\n'
           'from compilers import x\n'
           'import torch, os\n'
           'from . import sibling\n'
           'TASK = "runtime.evaluate:run"\n'
           'REF = "kernels.kmeans.reference.assign"  # from compiler.x import y\n'
           '"""from compiler import docstring"""\n')
    assert rewrite(src, PACKAGES) == src


@pytest.mark.parametrize("src", ["import compiler.service.client\n", "import runtime\n", "import os, compiler.x as y\n"])
def test_imports_that_bind_a_top_level_name_are_refused(src):
    with pytest.raises(RewriteError, match=r"m\.py:1: `import .*` binds a top-level name the wheel does not have"):
        rewrite(src, PACKAGES, "m.py")


def test_the_rewrite_is_idempotent_on_its_output():
    out = rewrite("from compiler import x\n", PACKAGES)
    assert rewrite(out, PACKAGES) == out
