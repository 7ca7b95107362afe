"""The compiler service in this process: the servicer a server runs, called without a transport.

    with InProcessClient() as cc:     # CompilerClient's methods and answers, no server process
        r = cc.verify(kernel)

A call goes through its request's and response's wire form and the servicer's own handler
(the one the server registers), so the answer is the one a server would send, and a
failed call raises the CompilerServiceError a remote call would, with the same code and
details; the client's retry and deadline rules apply as they do over gRPC. What differs
is where the work runs: work.py's tasks on the calling thread (not in worker processes:
no stage or memory limits), nvcc on a small compile pool of this process, building in a
private build directory, into the default compile cache.
"""

import shutil
import tempfile

import grpc

from cake.compiler.v1 import compiler_service_pb2 as service_pb2

from compiler.build import cache as compile_cache
from compiler.service import builds, servicer, work
from compiler.service.client import COMPILE_TIMEOUT, CompilerClient
from compiler.service.limits import Limits
from compiler.service.pool import CompilePool

# How long closing waits for a compile still running, in seconds.
CLOSE_GRACE_SECONDS = 30.0


class _RpcError(grpc.RpcError):
    """A failed in-process call, as CompilerServiceError.from_rpc_error reads a remote one."""

    def __init__(self, status):
        super().__init__(status.details)
        self._status = status

    def code(self):
        return self._status.code

    def details(self):
        return self._status.details

    def trailing_metadata(self):
        return self._status.trailing_metadata


class _Context:
    """What the servicer asks of a call's context: its deadline, an end callback, aborting."""

    def __init__(self, timeout):
        self._timeout = timeout

    def time_remaining(self):
        return self._timeout

    def add_callback(self, callback):
        return True  # an in-process caller does not go away in the middle of its call

    def abort_with_status(self, status):
        raise _RpcError(status)


class _Workers:
    """The servicer's worker pool, in this process: each task runs on the calling thread."""

    def __init__(self, cache):
        self.cache = cache

    def run(self, task, args, call, doing):
        call.check(doing)
        return work.tasks(lambda stage: call.check(doing), self.cache)[task](*args)


class _Stub:
    """CompilerServiceStub's methods, each calling the servicer's handler with the request's bytes."""

    def __init__(self, target):
        for method in servicer.SERVICE.methods:
            setattr(self, method.name, _method(target, method))


def _method(target, method):
    handle = servicer.handler(target, method)
    decode = servicer.decoder(getattr(service_pb2, method.input_type.name))
    response_class = getattr(service_pb2, method.output_type.name)

    def call(request, timeout=None, metadata=()):
        response = handle(decode(request.SerializeToString()), _Context(timeout))
        return response_class.FromString(servicer.encode(response))

    return call


class InProcessClient(CompilerClient):
    """A CompilerClient whose service runs in this process (see the module doc)."""

    def __init__(self, cache=None, compile_workers=1, compile_queue=16, timeout=30.0, retries=3,
                 compile_timeout=COMPILE_TIMEOUT):
        cache = compile_cache.default_cache() if cache is None else cache
        self._build_root = tempfile.mkdtemp(prefix="cake-inprocess-builds-")
        self.builds = builds.BuildRoot(self._build_root)
        self.builds.open()
        self.pool = CompilePool(compile_workers, compile_queue)
        target = servicer.CompilerServicer(_Workers(cache), self.pool, self.builds, Limits(), cache)
        self._use(_Stub(target), timeout, compile_timeout, retries)

    def close(self):
        self.pool.shutdown(CLOSE_GRACE_SECONDS)
        self.builds.close()
        shutil.rmtree(self._build_root, ignore_errors=True)
