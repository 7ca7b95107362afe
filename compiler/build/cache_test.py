"""Cache entries carry a checksum: an empty, truncated, altered or foreign entry is a miss, and the next
build rewrites it."""

import hashlib
import os

import pytest
from cake.compiler.v1 import artifact_pb2

from compiler.build import cache as compile_cache
from compiler.build.driver import build
from compiler.ir.text import parse_kernel
from compiler.testing.service_programs import copy_program

KEY = "c" * 64


@pytest.fixture
def cache(tmp_path):
    c = compile_cache.CompileCache(str(tmp_path))
    c.put(KEY, artifact_pb2.CompiledKernel(target="sm_90a", cubin=b"\x7fELF" + bytes(range(256)) * 64))
    return c


def _rewrite(cache, transform):
    path = cache._path(KEY)
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(transform(data))


def test_an_intact_entry_is_a_hit(cache):
    got = cache.get(KEY)
    assert got.target == "sm_90a" and got.cubin.startswith(b"\x7fELF")


@pytest.mark.parametrize("transform", [
    pytest.param(lambda data: b"", id="empty"),
    pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
    pytest.param(lambda data: data[:-1], id="last byte lost"),
    pytest.param(lambda data: data[:-5] + bytes([data[-5] ^ 1]) + data[-4:], id="one bit flipped"),
    pytest.param(lambda data: data[len(compile_cache.MAGIC) + 32:], id="old format: the bare payload"),
    pytest.param(lambda data: compile_cache.MAGIC[:-2] + b"9\n" + data[len(compile_cache.MAGIC):], id="other format"),
])
def test_a_damaged_entry_is_a_miss(cache, transform):
    _rewrite(cache, transform)
    assert cache.get(KEY) is None


def test_an_empty_proto_with_a_valid_checksum_is_what_was_written(cache):
    # The checksum vouches for the bytes, not their meaning: an entry we wrote empty reads back empty.
    cache.put(KEY, artifact_pb2.CompiledKernel())
    assert cache.get(KEY) == artifact_pb2.CompiledKernel()


def test_the_entry_layout():
    compiled = artifact_pb2.CompiledKernel(target="sm_80")
    data = compile_cache.encode_entry(compiled)
    payload = compiled.SerializeToString(deterministic=True)
    assert data == compile_cache.MAGIC + hashlib.sha256(payload).digest() + payload
    assert compile_cache.decode_entry(data) == compiled


def test_a_bad_entry_is_rebuilt_and_rewritten(tmp_path):
    cache = compile_cache.CompileCache(str(tmp_path))
    kernel = parse_kernel(copy_program("cache_rewrite", 1)).kernel
    first = build(kernel, cache)
    assert first.ok and not first.compiled.cache_hit
    [entry] = [os.path.join(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    with open(entry, "r+b") as f:
        f.truncate(100)
    second = build(kernel, cache)
    assert second.ok and not second.compiled.cache_hit  # the truncated entry was not served
    third = build(kernel, cache)
    assert third.compiled.cache_hit and third.compiled.cubin == second.compiled.cubin


def test_the_key_follows_the_lowered_source():
    # A fix in lowering changes the source of an unchanged IR: its cubin must not come from the old code.
    a = compile_cache.key("ir", "sm_90a", "nvcc 13.0", "__global__ void k() {}")
    assert a == compile_cache.key("ir", "sm_90a", "nvcc 13.0", "__global__ void k() {}")
    assert a != compile_cache.key("ir", "sm_90a", "nvcc 13.0", "__global__ void k() { }")
