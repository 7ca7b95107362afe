"""Which register fragments broadcast onto which: one value per row onto its rows' fragments, one value per
WGMMA_COLS column onto that column's lists, per_thread data by trailing dims, anything else only onto itself."""

from cake.ir.v1 import ir_pb2

from compiler.ir import operands

L = ir_pb2.FragmentLayout


def test_a_value_per_column_broadcasts_onto_the_columns_lists():
    cols = L.FRAGMENT_LAYOUT_WGMMA_COLS
    assert operands.fragment_mismatch(cols, [16], cols, [16, 10]) is None  # a seeded search's list starts
    assert operands.fragment_mismatch(cols, [16, 1], cols, [16, 10]) is None
    assert operands.fragment_mismatch(cols, [16], cols, [32, 10]) == "it holds 16 columns, the destination 32"


def test_a_value_per_column_does_not_broadcast_onto_an_accumulator_or_rows():
    cols = L.FRAGMENT_LAYOUT_WGMMA_COLS
    for layout, shape in ((L.FRAGMENT_LAYOUT_WGMMA_ACC, [64, 16]), (L.FRAGMENT_LAYOUT_WGMMA_ROWS, [64, 16])):
        assert "read only at a destination of its own layout" in operands.fragment_mismatch(cols, [16], layout, shape)


def test_a_value_per_row_broadcasts_within_its_family():
    rows, acc = L.FRAGMENT_LAYOUT_WGMMA_ROWS, L.FRAGMENT_LAYOUT_WGMMA_ACC
    assert operands.fragment_mismatch(rows, [64], acc, [64, 128]) is None
    assert operands.fragment_mismatch(rows, [64], L.FRAGMENT_LAYOUT_MMA_ACC, [64, 128]) == (
        "a one-per-row fragment only broadcasts onto fragments of its family")
