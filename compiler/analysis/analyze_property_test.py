"""Property: on any mutation of a valid kernel, analyze returns a CostReport or raises AnalysisError.

A mutation walks the kernel proto and, at a random field, sets a random value
(edge and out-of-range integers, unknown enum numbers, dangling names, random
expressions), clears it, or deletes or duplicates a repeated element; several
are stacked. Shapes are random too (absent, partial, out of range).
"""

import math

from google.protobuf import descriptor, message_factory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cake.compiler.v1 import analysis_pb2
from cake.ir.v1 import ir_pb2

from compiler.analysis import AnalysisError, analyze
from compiler.testing import analysis_kernels
from compiler.testing import strategies
from kernels.gemm import schedules as gemm
from kernels.kda import schedules as kda
from kernels.kmeans import schedules as kmeans
from kernels.knn import schedules as knn

FD = descriptor.FieldDescriptor
SEEDS = [
    gemm.gemm_sm90a(),
    gemm.gemm_sm90a(bm=64, bn=128, stages=2, consumers=1),
    gemm.gemm_sm80(),
    gemm.gemm_sm100a(),
    kmeans.assign_sm90a(),
    kmeans.assign_sm100a(),
    kmeans.update(),
    kmeans.finalize(),
    knn.rows_sm90a(),
    knn.cols_sm90a(),
    knn.merge(),
    kda.intra_sm90a(),
    kda.chain_sm90a(),
    analysis_kernels.copy_rows(),
    analysis_kernels.softmax_rows(),
    analysis_kernels.mma_sync_loop(),
    analysis_kernels.persistent_rows(),
]
SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _sites(message, out):
    """Every (message, field) below `message`, set or not."""
    for field in message.DESCRIPTOR.fields:
        out.append((message, field))
        if field.type != FD.TYPE_MESSAGE:
            continue
        if field.is_repeated:
            for child in getattr(message, field.name):
                _sites(child, out)
        elif message.HasField(field.name):
            _sites(getattr(message, field.name), out)
    return out


def _mutate(data, kernel):
    message, field = data.draw(st.sampled_from(_sites(kernel, [])))
    action = data.draw(st.sampled_from(["set", "clear", "delete", "duplicate"]))
    if action == "clear" or (action != "set" and not field.is_repeated):
        message.ClearField(field.name)
        return
    values = getattr(message, field.name) if field.is_repeated else None
    if action in ("delete", "duplicate") and values:
        i = data.draw(st.integers(0, len(values) - 1))
        if action == "delete":
            del values[i]
        elif field.type == FD.TYPE_MESSAGE:
            values.add().CopyFrom(values[i])
        else:
            values.append(values[i])
        return
    if field.type == FD.TYPE_MESSAGE:
        drawn = data.draw(strategies.messages(message_factory.GetMessageClass(field.message_type), max_nodes=8))
        (values.add() if field.is_repeated else getattr(message, field.name)).CopyFrom(drawn)
        return
    value = data.draw(strategies.scalars(field))
    if field.is_repeated:
        values.append(value)
    else:
        setattr(message, field.name, value)


def _shapes(data, kernel):
    """None, or values for some of the kernel's symbols (mostly plausible, sometimes anything)."""
    names = [s.name for s in kernel.contract.symbols] + ["Q"]
    values = st.one_of(st.sampled_from([128, 256, 4096, 8192]), st.integers(-(1 << 63), (1 << 63) - 1))
    return data.draw(st.none() | st.dictionaries(st.sampled_from(names), values, max_size=3))


def _check(kernel, shapes):
    try:
        report = analyze(kernel, shapes)
    except AnalysisError:
        return
    assert isinstance(report, analysis_pb2.CostReport)
    assert math.isfinite(report.predicted_seconds) and report.predicted_seconds > 0
    assert report.bottleneck in {s.name for s in report.stages}


@settings(max_examples=1000, **SETTINGS)
@given(data=st.data(), seed=st.sampled_from(SEEDS), mutations=st.integers(1, 4))
def test_mutated_kernels_get_a_report_or_an_analysis_error(data, seed, mutations):
    kernel = ir_pb2.Kernel()
    kernel.CopyFrom(seed)
    shapes = _shapes(data, kernel)
    for _ in range(mutations):
        _mutate(data, kernel)
    _check(kernel, shapes)


@settings(max_examples=200, **SETTINGS)
@given(kernel=strategies.messages(ir_pb2.Kernel), target=st.sampled_from([1, 2, 3]))
def test_arbitrary_kernels_get_a_report_or_an_analysis_error(kernel, target):
    kernel.target = target  # past the first check, into the rest of the analysis
    _check(kernel, None)
