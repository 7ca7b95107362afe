"""The service fuzz suite at CI size: mutated and random requests of every kind against a real server
(compiler/testing/service_fuzz.py). No call ends INTERNAL or in an unexpected status, the server survives
and stops cleanly, and its own processes stay under MEMORY_BOUND_MIB of resident memory. The large run
(10,000+ requests) is committed as benchmarks/results/service_fuzz.json."""

import grpc

from cake.compiler.v1 import compiler_service_pb2 as pb

from compiler.service.local import LocalServer
from compiler.testing import service_fuzz

REQUESTS = 600
SEED = 20261201
# The server, its fork server and its workers together (about 250 MiB idle on the development VM;
# each worker may reach its 2 GiB address-space cap only for one request, then it is replaced).
MEMORY_BOUND_MIB = 1024


def test_fuzzed_requests_get_expected_statuses_and_bounded_memory(tmp_path):
    with LocalServer(cache_dir=tmp_path / "cache") as server:
        report = service_fuzz.run(server.address, server.process.pid, REQUESTS, seed=SEED, clients=4)
        with grpc.insecure_channel(server.address) as channel:
            rules = channel.unary_unary("/cake.compiler.v1.CompilerService/ListRules")(b"", timeout=30)
        assert pb.ListRulesResponse.FromString(rules).rules
        assert server.stop() == 0
    assert report["failures"] == 0, report["failure_examples"]
    assert report["max_rss_mib"]["server"] < MEMORY_BOUND_MIB, report["max_rss_mib"]
    assert set(report["outcomes_by_kind"]) == set(service_fuzz.KINDS)
    assert "OK" in report["outcomes"] and any(k.startswith("INVALID_ARGUMENT") for k in report["outcomes"])
