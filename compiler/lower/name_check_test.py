"""No string in a kernel can put anything but names into generated code: a hostile string in any name
field is refused at its IR path, and one in a free-text field changes nothing lowering prints."""

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.ir import names, paths
from compiler.ir.builder import KernelBuilder
from compiler.lower import LoweringError, lower
from compiler.lower.lower_test import ring_copy
from kernels.gemm.schedules import gemm_sm90a

# Ways out of an identifier into the preprocessor or the surrounding code.
PAYLOADS = (
    '\n#include "/etc/passwd"\n',
    "x\n#include </etc/hostname>\nint y",
    "x\\\n#include </etc/hostname>",
    "x\r#include </etc/hostname>\r",
    "x\n%:include </etc/hostname>\n",
    "x ??= include </etc/hostname>",
    'x; _Pragma("GCC dependency \\"/etc/passwd\\"")',
    "x) { } /* ",
    "x */ #include <x>",
    'x"\n#include "y',
    "x\x00y",
    "x\u2028#include </etc/hostname>",
    "a-b",
    "1x",
    " x",
    "x.",
)
_BASES = {"ring_copy": ring_copy(), "gemm_sm90a": gemm_sm90a()}
_SOURCES = {name: lower(k).source for name, k in _BASES.items()}


def _string_sites(kernel):
    """(node path, field name, index or None) of every string field of every node of `kernel`."""
    out = []
    for path, node in paths.walk(kernel):
        for f in node.DESCRIPTOR.fields:
            if f.type != FieldDescriptor.TYPE_STRING:
                continue
            if f.is_repeated:
                out += [(path, f, i) for i in range(len(getattr(node, f.name)))]
            else:
                out.append((path, f, None))
    return out


def _node(kernel, path):
    return paths.resolve(kernel, path)


hostile = st.one_of(
    st.sampled_from(PAYLOADS),
    st.builds(lambda a, b: a + b, st.sampled_from(("x", "N", "tile", "block.x")), st.sampled_from(PAYLOADS)),
    st.text(min_size=1, max_size=12),
).filter(lambda s: not names.DOTTED_IDENTIFIER.match(s))


@settings(max_examples=400, deadline=None)
@given(data=st.data(), base=st.sampled_from(sorted(_BASES)), payload=hostile)
def test_a_hostile_string_is_refused_at_its_path_or_prints_nothing(data, base, payload):
    kernel = type(_BASES[base])()
    kernel.CopyFrom(_BASES[base])
    path, field, index = data.draw(st.sampled_from(_string_sites(kernel)))
    node = _node(kernel, path)
    if index is None:
        setattr(node, field.name, payload)
    else:
        getattr(node, field.name)[index] = payload
    try:
        ctx = lower(kernel)
    except LoweringError as e:
        assert field.full_name not in names.FREE_TEXT
        assert e.path == path and e.message.startswith(field.name)
        return
    assert field.full_name in names.FREE_TEXT
    assert ctx.source == _SOURCES[base]


def test_the_only_file_generated_code_includes_is_the_device_library():
    for source in _SOURCES.values():
        directives = {l.strip() for l in source.splitlines() if l.lstrip().startswith(("#", "%:"))}
        assert directives - {"#pragma unroll"} == {"#include <cake/cake.cuh>"}


def test_the_kernel_name_cannot_include_a_file():
    k = ring_copy()
    k.name = 'x(\n#include "/etc/passwd"\nvoid y'
    with pytest.raises(LoweringError) as e:
        lower(k)
    assert e.value.path == "kernel" and "name 'x(\\n#include" in e.value.message


def test_an_unset_expression_is_a_lowering_error_at_its_op():
    k = KernelBuilder("unset_expr", target="sm_90a")
    n = k.symbol("N", min=32, max=1 << 20)
    k.grid(n // 32)
    with k.role("r", "compute", warps=1) as r:
        with r.loop("i", 0, 4):
            r.block_sync()
    kernel = k.build()
    kernel.roles[0].body[0].loop.end.Clear()
    with pytest.raises(LoweringError) as e:
        lower(kernel)
    assert e.value.path == "kernel.roles[0].body[0].loop" and "unset" in e.value.message
