"""No request makes nvcc read a file outside its build directory, the device library and the toolchain.

The server runs nvcc through a wrapper that adds `-MD -MF`, so every compile records the
files it read. Requests put hostile strings (newlines, #include, line splices, digraphs, ...)
into every string field of a kernel, verified or not, in each program form; then every
recorded file must be one a clean kernel's compile reads, or the build directory's own.
"""

import glob
import json
import os

import pytest
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cake.compiler.v1 import compiler_service_pb2 as pb

from compiler.build import nvcc
from compiler.ir import names, paths
from compiler.ir.text import parse_kernel
from compiler.service.client import start_local_server
from compiler.testing.service_programs import copy_program

PAYLOADS = (
    '\n#include "/etc/passwd"\n',
    "x\n#include </etc/hostname>\nint y",
    "x\\\n#include </etc/hostname>",
    "x\r#include </etc/hostname>\r",
    "x\n%:include </etc/hostname>\n",
    'x; _Pragma("GCC dependency \\"/etc/passwd\\"")',
    "x */\n#include </etc/hostname>\n/* ",
    "x\x00\n#include </etc/hostname>",
)
SETTINGS = dict(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
BASE = parse_kernel(copy_program("inject", 1)).kernel


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """(client, the directory of dependency files, what a clean compile reads, the server's build directory)."""
    root = tmp_path_factory.mktemp("inject")
    deps = root / "deps"
    deps.mkdir()
    home = root / "cuda"
    (home / "bin").mkdir(parents=True)
    wrapper = home / "bin" / "nvcc"
    wrapper.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then exec %s "$@"; fi\nexec %s "$@" -MD -MF %s/$$.d\n'
        % (nvcc.find_nvcc(), nvcc.find_nvcc(), deps))
    wrapper.chmod(0o755)
    with start_local_server(cache_dir=root / "cache", env={"CUDA_HOME": str(home)}, timeout=300) as cc:
        assert cc.compile(copy_program("inject", 1)).compiled.cubin
        [serving] = [json.loads(l) for l in cc.server.log().splitlines() if '"event": "serving"' in l]
        builds = os.path.realpath(serving["build_dir"]) + os.sep
        clean = {p for p in _read(deps) if not p.startswith(builds)}
        assert any(p.endswith(os.sep + os.path.join("cake", "cake.cuh")) for p in clean)  # the device library
        yield cc, deps, clean, builds


def _read(deps):
    files = set()
    for path in glob.glob(str(deps / "*.d")):
        with open(path) as f:
            text = f.read().replace("\\\n", " ")
        for word in text.split(":", 1)[1].split():
            files.add(os.path.realpath(word))
        os.unlink(path)
    return files


def _sites(kernel):
    out = []
    for path, node in paths.walk(kernel):
        for f in node.DESCRIPTOR.fields:
            if f.type == FieldDescriptor.TYPE_STRING and not f.is_repeated:
                out.append((path, f.name, f.full_name))
    return out


@settings(**SETTINGS)
@given(data=st.data(), payload=st.sampled_from(PAYLOADS), skip_verify=st.booleans(),
       form=st.sampled_from(["kernel", "kernel_bytes"]))
def test_no_request_makes_nvcc_read_another_file(recorded, data, payload, skip_verify, form):
    cc, deps, clean, builds = recorded
    kernel = type(BASE)()
    kernel.CopyFrom(BASE)
    path, field, full_name = data.draw(st.sampled_from(_sites(kernel)))
    setattr(paths.resolve(kernel, path), field, payload)
    program = pb.Program(kernel=kernel) if form == "kernel" else pb.Program(kernel_bytes=kernel.SerializeToString())
    response = cc.compile(program, skip_verify=skip_verify)
    if full_name not in names.FREE_TEXT:  # refused: by lowering at the field's node when unverified
        assert not response.HasField("compiled") and response.diagnostics
        if skip_verify:
            assert [(d.id, d.path) for d in response.diagnostics] == [("CAKE-BUILD-001", path)]
    for read in _read(deps):
        assert read in clean or read.startswith(builds), read


def test_a_kernel_name_with_an_include_is_refused_unverified(recorded):
    cc, deps, _, _ = recorded
    kernel = type(BASE)()
    kernel.CopyFrom(BASE)
    kernel.name = 'x(\n#include "/etc/passwd"\nvoid y'
    response = cc.compile(kernel, skip_verify=True)
    [d] = response.diagnostics
    assert (d.id, d.path) == ("CAKE-BUILD-001", "kernel") and "not a C identifier" in d.message
    assert _read(deps) == set()  # nvcc never ran
