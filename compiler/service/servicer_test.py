"""The servicer without processes: where each request's work goes (fake workers and compile pool)."""

import pytest
from cake.compiler.v1 import artifact_pb2
from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.compiler.v1 import diagnostics_pb2

from compiler.build import cache as compile_cache
from compiler.service import errors, work
from compiler.service.limits import Limits
from compiler.service.servicer import CompilerServicer, Incoming

KEY = "d" * 64


class _Context:
    def time_remaining(self):
        return 30.0

    def add_callback(self, fn):
        return True


class _Workers:
    """Answers every compile task with a compiled kernel under KEY, counting the tasks."""

    def __init__(self):
        self.tasks = []

    def run(self, task, args, call, doing):
        self.tasks.append(task)
        diags = pb.CompileResponse(diagnostics=[diagnostics_pb2.Diagnostic(id="CAKE-RES-900", message="a warning")])
        response = pb.CompileResponse(diagnostics=diags.diagnostics, compiled=artifact_pb2.CompiledKernel(target="sm_90a"))
        return work.Done(response.SerializeToString(), KEY, diags.SerializeToString())


class _NoPool:
    def submit(self, fn, deadline=None):
        pytest.fail("the compile pool was used")


@pytest.fixture
def setup(tmp_path):
    cache = compile_cache.CompileCache(str(tmp_path))
    workers = _Workers()
    servicer = CompilerServicer(workers, _NoPool(), None, Limits(program_bytes=1000), cache)
    return servicer, workers, cache


def _compile(servicer, text="kernel k {}"):
    request = pb.CompileRequest(program=pb.Program(text=text))
    response = servicer.Compile(Incoming(request, request.SerializeToString()), _Context())
    return pb.CompileResponse.FromString(response) if isinstance(response, bytes) else response


def test_a_compile_asked_again_is_answered_from_the_cache_alone(setup):
    servicer, workers, cache = setup
    cache.put(KEY, artifact_pb2.CompiledKernel(target="sm_90a", cubin=b"\x7fELF"))
    first = _compile(servicer)
    assert workers.tasks == ["compile"] and not first.compiled.cache_hit
    for _ in range(3):
        again = _compile(servicer)
        assert again.compiled.cache_hit and again.compiled.cubin == b"\x7fELF"
        assert [d.id for d in again.diagnostics] == ["CAKE-RES-900"]  # the first answer's findings
    assert workers.tasks == ["compile"]  # no worker, no verification, no pool


def test_a_remembered_compile_whose_entry_went_bad_takes_the_full_path(setup):
    servicer, workers, cache = setup
    cache.put(KEY, artifact_pb2.CompiledKernel(target="sm_90a"))
    _compile(servicer)
    with open(cache._path(KEY), "r+b") as f:
        f.truncate(10)
    _compile(servicer)
    assert workers.tasks == ["compile", "compile"]


def test_without_a_cache_nothing_is_remembered(tmp_path):
    workers = _Workers()
    servicer = CompilerServicer(workers, _NoPool(), None, Limits(), None)
    _compile(servicer)
    _compile(servicer)
    assert workers.tasks == ["compile", "compile"]


def test_a_program_over_the_size_limit_is_invalid_argument(setup):
    servicer, workers, _ = setup
    with pytest.raises(errors.ServiceError) as e:
        _compile(servicer, "kernel k { %s }" % ("#" * 2000))
    assert e.value.code.name == "INVALID_ARGUMENT"
    [bad, info] = e.value.details
    assert bad.field_violations[0].field == "program.text" and info.reason == "PROGRAM_TOO_LARGE"
    assert "--max-program-bytes" in e.value.message and workers.tasks == []
