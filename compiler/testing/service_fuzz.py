"""Fuzzing the compiler service: mutated and random requests against a real server process.

    python -m compiler.testing.service_fuzz [--requests 10000] [--seed 1] [--clients 8]
        [--out benchmarks/results/service_fuzz.json]        # or: bazel run //compiler/testing:service_fuzz

`request(seed, index)` makes request number `index` of a run (the same one every
time): a kind, weighted as in KINDS,
    text     a program's text with random edits: spans cut, doubled or cut short; junk
             inserted (brackets, quotes, newlines, NUL, non-ASCII, keywords, huge numbers
             and names); numbers and names swapped for others (edits that still parse)
    kernel   a parsed program with random field edits: a scalar set to an odd value, a
             message cleared or emptied, a list element dropped or doubled, hostile strings
    bytes    a serialized program with bytes flipped, cut or inserted, as kernel_bytes
    random   a Kernel filled at random from the schema
    raw      random bytes as the whole request, to any method
    fields   odd request fields: unknown targets and devices, shapes at extremes
sent to Verify, Analyze or Compile (skip_verify at random; Compile only of the small
programs, so that nvcc runs stay short). One request in ten has a deadline of a few
milliseconds, to exercise cancellation everywhere.

Allowed outcomes: OK (whose bytes decode as the response; a Compile that built a kernel
is counted as OK/COMPILED or OK/CACHE_HIT); INVALID_ARGUMENT;
RESOURCE_EXHAUSTED naming a limit or a full compile queue; DEADLINE_EXCEEDED or
CANCELLED for a short deadline or a Compile (20 s). Anything else — INTERNAL, UNKNOWN,
UNAVAILABLE (the server died) — is a failure. The resident memory of the server's
own processes (server, fork server, workers) and of its nvcc runs is sampled
throughout.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import random
import re
import tempfile
import threading
import time

import grpc
from google.protobuf.descriptor import FieldDescriptor as FD
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from cake.compiler.v1 import compiler_service_pb2 as pb
from cake.ir.v1 import ir_pb2

from compiler.corpus import corpus
from compiler.ir import paths
from compiler.ir.descriptors import INT_RANGES
from compiler.ir.text import parse_kernel
from compiler.service.local import LocalServer
from compiler.testing.machine import machine, results_path
from compiler.testing.service_programs import copy_program

KINDS = {"text": 30, "kernel": 30, "bytes": 12, "random": 10, "raw": 8, "fields": 10}
METHODS = ("Verify", "Analyze", "Compile")
SHORT_DEADLINE_SHARE = 0.1
COMPILE_SECONDS = 20.0
CALL_SECONDS = 60.0
LIMIT_REASONS = {"PARSE_TIME_LIMIT", "VERIFY_TIME_LIMIT", "ANALYZE_TIME_LIMIT", "LOWER_TIME_LIMIT",
                 "NVCC_TIME_LIMIT", "MEMORY_LIMIT", "COMPILE_QUEUE_FULL"}

JUNK = ("{", "}", "[", "]", "(", ")", ":", ",", "@", "#", '"', "\\", "\n", "\r", "\t", "\x00", "\u00e9",
        "\U0001d518", "\ud7ff", "kernel", "role", "loop", "region", "barrier", "0x", "1e999", "-",
        "99999999999999999999999999", "nan(0x7ff)", "..", "+:", "==", "&&", "%", "/", "*",
        '"\\u{110000}"', '"\\q"', "block.x.y", "_", "inf", "-0.0")
HOSTILE = ("", " ", "\n#include </etc/hostname>\n", "x\\\n", "a.b", "1x", "x" * 5000, "\u00e9", "\x00",
           "block.x", "kernel", "N")


class _Bases:
    """Programs to mutate, parsed once: the corpus (any method) and small copy programs (Compile too)."""

    def __init__(self):
        self.texts = {}
        for name in sorted(corpus.GOOD):
            with open(corpus.path(name)) as f:
                self.texts[name] = f.read()
        self.small = {"copy_%d" % r: copy_program("fuzz_%d" % r, r) for r in (1, 2, 3)}
        self.texts.update(self.small)
        self.kernels = {name: parse_kernel(text).kernel for name, text in self.texts.items()}


_bases = None
_bases_lock = threading.Lock()


def bases():
    global _bases
    with _bases_lock:
        if _bases is None:
            _bases = _Bases()
        return _bases


def request(seed, index):
    """Request `index` of run `seed`: (kind, method, request bytes, timeout in seconds)."""
    rng = random.Random(seed * 1_000_003 + index)
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    method = rng.choice(METHODS)
    b = bases()
    names = sorted(b.small if method == "Compile" else b.texts)
    base = rng.choice(names)
    timeout = COMPILE_SECONDS if method == "Compile" else CALL_SECONDS
    if rng.random() < SHORT_DEADLINE_SHARE:
        timeout = rng.uniform(0.001, 0.05)
    if kind == "raw":
        method = rng.choice(METHODS + ("ListTargets", "ListRules", "ListPrimitives"))
        return kind, method, rng.randbytes(rng.randint(0, 300)), timeout
    if kind == "text":
        program = pb.Program(text=_edit_text(rng, b.texts[base]))
    elif kind == "kernel":
        program = pb.Program(kernel=_edit_kernel(rng, b.kernels[base]))
    elif kind == "bytes":
        program = pb.Program(kernel_bytes=_edit_bytes(rng, b.kernels[base].SerializeToString()))
    elif kind == "random":
        kernel = ir_pb2.Kernel()
        _fill(rng, kernel, depth=0, budget=[60])
        program = pb.Program(kernel=kernel)
    else:
        program = pb.Program(kernel=b.kernels[base])
    message = _request_message(rng, method, program, odd_fields=kind == "fields")
    return kind, method, message.SerializeToString(), timeout


def _request_message(rng, method, program, odd_fields):
    skip = rng.random() < 0.3
    if method == "Verify":
        return pb.VerifyRequest(program=program)
    if method == "Analyze":
        shapes, device = {}, ""
        if odd_fields:
            shapes = {rng.choice(("N", "M", "K", "B", "x", "")): rng.choice((0, -1, 1, 1 << 62, -(1 << 63), 7))
                      for _ in range(rng.randint(1, 4))}
            device = rng.choice(("", "H200", "sm_90a/H200", "H100-SXM", "V100", "sm_80/H200", "x" * 300))
        return pb.AnalyzeRequest(program=program, shapes=shapes, device=device, skip_verify=skip)
    target = rng.choice(("", "sm_80", "sm_90a", "sm_100a", "sm_70", "SM_90A", "x" * 300)) if odd_fields else ""
    return pb.CompileRequest(program=program, target=target, skip_verify=skip)


_NUMBER = re.compile(r"\b[0-9]+\b")
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")


def _edit_text(rng, text):
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op >= 5:  # a gentle edit that often still parses: a number or a name replaced by another
            pattern = _NUMBER if op == 5 else _WORD
            spots = list(pattern.finditer(text))
            if spots:
                spot = rng.choice(spots)
                new = str(rng.choice((0, 1, 3, 64, 255, 1 << 31, 1 << 40))) if op == 5 else rng.choice(spots).group()
                text = text[:spot.start()] + new + text[spot.end():]
            continue
        a = rng.randint(0, len(text))
        b = min(len(text), a + rng.randint(0, 200))
        if op == 0:
            text = text[:a] + text[b:]
        elif op == 1:
            text = text[:a] + text[a:b] + text[a:]
        elif op == 2:
            junk = rng.choice(JUNK) if rng.random() < 0.8 else "x" * rng.randint(1, 5000)
            text = text[:a] + junk + text[a:]
        elif op == 3:
            text = text[:a]
        else:
            words = text.split()
            if words:
                text = text[:a] + " " + rng.choice(words) + " " + text[a:]
    return text


def _edit_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 5)):
        op = rng.randrange(3)
        a = rng.randint(0, len(data))
        if op == 0 and data:
            i = min(a, len(data) - 1)
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del data[a:a + rng.randint(1, 64)]
        else:
            data[a:a] = rng.randbytes(rng.randint(1, 16))
    return bytes(data)


def _edit_kernel(rng, base):
    kernel = ir_pb2.Kernel()
    kernel.CopyFrom(base)
    nodes = list(paths.walk(kernel))
    for _ in range(rng.randint(1, 3)):
        _, node = rng.choice(nodes)
        fields = node.DESCRIPTOR.fields
        if fields:
            _edit_field(rng, node, rng.choice(fields))
    return kernel


def _edit_field(rng, node, field):
    if field.is_repeated:
        items = getattr(node, field.name)
        if len(items) and rng.random() < 0.5:
            del items[rng.randrange(len(items))]
        elif len(items) and field.message_type is not None:
            items.add().CopyFrom(items[rng.randrange(len(items))])
        elif field.message_type is None:
            items.append(_scalar(rng, field))
        return
    if field.message_type is not None:
        if rng.random() < 0.5:
            node.ClearField(field.name)
        else:
            sub = getattr(node, field.name)
            sub.Clear()
            sub.SetInParent()
        return
    setattr(node, field.name, _scalar(rng, field))


def _scalar(rng, field):
    kind = field.type
    if kind in INT_RANGES:
        low, high, _ = INT_RANGES[kind]
        return rng.choice((0, 1, -1, 2, 64, 255, 1 << 20, low, high, rng.randint(low, high), rng.randint(-3, 300)))
    if kind == FD.TYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [rng.randint(-2, 1000)])
    if kind == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FD.TYPE_STRING:
        return rng.choice(HOSTILE)
    if kind == FD.TYPE_BYTES:
        return rng.randbytes(rng.randint(0, 8))
    if kind in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return rng.choice((0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 1e-45, 3e38))
    raise NotImplementedError(field.full_name)


def _fill(rng, message, depth, budget):
    budget[0] -= 1
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.6:
            continue
        if field.message_type is not None:
            if depth >= 6 or budget[0] <= 0:
                continue
            if field.is_repeated:
                for _ in range(rng.randint(0, 3)):
                    _fill(rng, getattr(message, field.name).add(), depth + 1, budget)
            else:
                _fill(rng, getattr(message, field.name), depth + 1, budget)
                getattr(message, field.name).SetInParent()
        elif field.is_repeated:
            getattr(message, field.name).extend(_scalar(rng, field) for _ in range(rng.randint(0, 3)))
        else:
            setattr(message, field.name, _scalar(rng, field))


def outcome(method, timeout, call):
    """(status name, reason or "", allowed) of sending one request: `call()` returns response bytes or raises."""
    try:
        data = call()
    except grpc.RpcError as e:
        code = e.code()
        reason = _reason(e)
    else:
        response_class = getattr(pb, method + "Response")
        try:
            response = response_class.FromString(data)
        except Exception:  # noqa: BLE001
            return "OK", "UNDECODABLE", False
        compiled = method == "Compile" and response.HasField("compiled")
        return "OK", ("CACHE_HIT" if response.compiled.cache_hit else "COMPILED") if compiled else "", True
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return code.name, reason, True
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return code.name, reason, reason in LIMIT_REASONS
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return code.name, reason, timeout < 1.0 or method == "Compile"
    return code.name, reason, False


def _reason(error):
    try:
        status = rpc_status.from_call(error)
    except Exception:  # noqa: BLE001  (details that do not decode: no reason)
        return "UNDECODABLE_DETAILS"
    for packed in status.details if status else ():
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            return info.reason
    return ""


class MemorySampler:
    """Samples the resident memory of a server's process tree: its own processes, and its nvcc runs."""

    def __init__(self, pid, interval=0.2):
        self.pid = pid
        self.interval = interval
        self.server_max = 0
        self.nvcc_max = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def sample(self):
        server = nvcc = 0
        for pid, name, rss in _tree(self.pid):
            if name.startswith("python"):
                server += rss
            else:
                nvcc += rss
        self.server_max = max(self.server_max, server)
        self.nvcc_max = max(self.nvcc_max, nvcc)
        return server

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.sample()


def _tree(root):
    """(pid, command name, resident bytes) of `root` and every process below it."""
    info = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % pid) as f:
                head, rest = f.read().rsplit(")", 1)
            with open("/proc/%s/statm" % pid) as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            info[int(pid)] = (int(rest.split()[1]), head.split("(", 1)[1], rss)
        except (OSError, IndexError, ValueError):
            pass
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in info.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return [(pid, info[pid][1], info[pid][2]) for pid in tree if pid in info]


def run(address, server_pid, count, seed=1, clients=8, progress=None):
    """Send requests 0..count-1 of run `seed` from `clients` threads; the report (see main)."""
    counts = collections.Counter()
    failures = []
    lock = threading.Lock()
    channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20),
                                                       ("grpc.max_receive_message_length", 64 << 20)])
    calls = {m.name: channel.unary_unary("/cake.compiler.v1.CompilerService/" + m.name)
             for m in pb.DESCRIPTOR.services_by_name["CompilerService"].methods}
    bases()
    start = time.monotonic()

    def one(index):
        kind, method, data, timeout = request(seed, index)
        status, reason, allowed = outcome(method, timeout, lambda: calls[method](data, timeout=timeout))
        with lock:
            counts[(method, kind, status, reason)] += 1
            if not allowed:
                failures.append({"index": index, "kind": kind, "method": method, "status": status, "reason": reason})
            done = sum(counts.values())
        if progress and done % 500 == 0:
            progress(done)

    with MemorySampler(server_pid) as memory, concurrent.futures.ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(one, i) for i in range(count)]:
            f.result()
        memory.sample()
    seconds = time.monotonic() - start
    channel.close()
    by_status = collections.Counter()
    by_method = collections.defaultdict(collections.Counter)
    by_kind = collections.defaultdict(collections.Counter)
    for (method, kind, status, reason), n in counts.items():
        label = status + ("/" + reason if reason else "")
        by_status[label] += n
        by_method[method][label] += n
        by_kind[kind][label] += n
    return {
        "requests": count,
        "seed": seed,
        "clients": clients,
        "seconds": round(seconds, 1),
        "failures": len(failures),
        "failure_examples": failures[:20],
        "outcomes": dict(sorted(by_status.items())),
        "outcomes_by_method": {m: dict(sorted(c.items())) for m, c in sorted(by_method.items())},
        "outcomes_by_kind": {k: dict(sorted(c.items())) for k, c in sorted(by_kind.items())},
        "max_rss_mib": {"server": round(memory.server_max / (1 << 20), 1),
                        "nvcc": round(memory.nvcc_max / (1 << 20), 1)},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--out", default=results_path("service_fuzz.json"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cake-fuzz-cache-") as cache_dir, LocalServer(cache_dir=cache_dir) as server:
        report = run(server.address, server.process.pid, args.requests, args.seed, args.clients,
                     progress=lambda n: print("%d requests" % n, flush=True))
        with grpc.insecure_channel(server.address) as channel:  # still up, still answering
            alive = pb.ListRulesResponse.FromString(
                channel.unary_unary("/cake.compiler.v1.CompilerService/ListRules")(b"", timeout=30))
        report["server_alive_after"] = bool(alive.rules)
        report["server_exit_code"] = server.stop()
    result = {"benchmark": "compiler/testing/service_fuzz.py", "machine": machine(), "fuzz": report}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(json.dumps(report, indent=2))
    return 0 if report["failures"] == 0 and report["server_alive_after"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
