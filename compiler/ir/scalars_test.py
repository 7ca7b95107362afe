"""Register scalars: one element per owner thread, by layout and shape; a name means its first declaration."""

from cake.ir.v1 import ir_pb2

from compiler.ir import scalars

L = ir_pb2.FragmentLayout
REG = ir_pb2.MEMORY_SPACE_REGISTER


def _region(name, layout, shape, owner="main", space=REG):
    return ir_pb2.Region(name=name, space=space, dtype=ir_pb2.DTYPE_I32, shape=shape, layout=layout, owner=owner)


def test_one_element_per_thread_is_a_scalar():
    assert scalars.is_scalar(_region("a", L.FRAGMENT_LAYOUT_PER_THREAD, [1]))
    assert scalars.is_scalar(_region("b", L.FRAGMENT_LAYOUT_ROW_PER_THREAD, [128]))
    assert scalars.is_scalar(_region("c", L.FRAGMENT_LAYOUT_ROW_PER_THREAD, [128, 1]))
    assert not scalars.is_scalar(_region("d", L.FRAGMENT_LAYOUT_PER_THREAD, [4]))
    assert not scalars.is_scalar(_region("e", L.FRAGMENT_LAYOUT_ROW_PER_THREAD, [128, 2]))
    assert not scalars.is_scalar(_region("f", L.FRAGMENT_LAYOUT_WGMMA_ROWS, [64]))
    assert not scalars.is_scalar(_region("g", 0, [1], space=ir_pb2.MEMORY_SPACE_SHARED))


def test_role_scalars_are_its_own_by_first_declaration():
    k = ir_pb2.Kernel(regions=[
        _region("x", L.FRAGMENT_LAYOUT_PER_THREAD, [1]),
        _region("y", L.FRAGMENT_LAYOUT_PER_THREAD, [1], owner="other"),
        _region("z", L.FRAGMENT_LAYOUT_PER_THREAD, [8]),
        _region("z", L.FRAGMENT_LAYOUT_PER_THREAD, [1]),  # a duplicate: `z` names the first
    ])  # fmt: skip
    assert scalars.role_scalars(k, "main") == {"x": 0}
    assert scalars.role_scalars(k, "other") == {"y": 1}
