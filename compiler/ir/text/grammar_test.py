"""The written-out grammar names every op, every field a program can hold, and the compact forms as compact.py does."""

import re

from cake.ir.v1 import ir_pb2

from compiler.ir.text import compact, grammar, parse_kernel, schema


def _blocks():
    out = {}
    for line in grammar.grammar().splitlines():
        m = re.match(r"  (\w+) \{ (.*) \}$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_every_op_keyword_has_its_block():
    blocks = _blocks()
    assert sorted(k for k in schema.OP_KEYWORDS if k not in blocks) == []
    assert "src: <GlobalRef>; dst: <TileRef>; barrier: <BarrierRef>" in blocks["tma_load"]


def test_every_field_of_the_kernel_and_its_entries_is_named_with_its_spelling():
    blocks = _blocks()
    for message in (ir_pb2.Kernel, ir_pb2.Region, ir_pb2.Role, ir_pb2.Barrier, ir_pb2.Param, ir_pb2.Mma):
        syntax = schema.syntax(message.DESCRIPTOR)
        written = blocks.get(message.DESCRIPTOR.name) or blocks[message.DESCRIPTOR.name.lower()]
        # The header holds the name; a direct op list is "then its ops".
        keywords = [f.keyword for f in syntax.fields if f is not syntax.ops and f.name != "name"]
        assert [k for k in keywords if not re.search(r"(^|; )%s\b" % k, written)] == [], written
    assert "swizzle: none|32b|64b|128b" in blocks["Region"]  # enum fields list their short names
    assert "param NAME { Param } (repeated)" in blocks["Kernel"] and "then its ops" in blocks["Role"]


def test_the_compact_forms_are_compact_pys_own_description():
    text = grammar.grammar()
    assert "    TileRef     `sA`, `sA@0`" in text and "    Loop        `loop kt in 0 .. K / 64 { ... }`" in text
    assert all(line.rstrip() in text for line in compact.__doc__.splitlines()[2:8])


def test_a_kernel_written_from_it_parses():
    # Spelled only from the grammar's lines: a block per entry, compact references, an op under its keyword.
    text = """kernel k {
  target: sm_90a
  launch { grid: [N / 64] }
  param x { kind: tensor  dtype: f32  shape: [N, 64]  access: read }
  region s { space: shared  dtype: f32  shape: [64, 64]  stages: 2  swizzle: 128b }
  barrier full { kind: mbarrier  count: 2  arrivals: 1  tx_bytes: 16384 }
  role all {
    kind: compute  warps: 4
    loop kt in 0 .. 4 {
      tma_load { src: x[block.x * 64, kt * 16]  dst: s@(kt % 2)  barrier: full@round(kt) }
      mbarrier_wait { barrier: full@round(kt) }
    }
  }
}
"""
    assert parse_kernel(text).kernel.roles[0].body[0].loop.body[0].tma_load.dst.region == "s"
