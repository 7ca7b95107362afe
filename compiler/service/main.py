"""Run the CAKE compiler service: `bazel run //compiler:server -- [flags]` or `python -m compiler.service.main`.

Prints the bound port alone on the first line of stdout (with --port 0 the system
picks one; tests read it), then logs JSON lines on stderr. Listens on 127.0.0.1
unless --host says otherwise; a non-loopback host needs TLS (--tls-cert/--tls-key)
or a bearer token (--token-file, or $CAKE_TOKEN) unless --insecure-allow-remote.
SIGTERM or SIGINT (or, with --parent-pid, the death of the process that started it):
health turns NOT_SERVING, new calls are refused, in-flight calls get --grace-seconds to
finish, and the process exits 0. It refuses to start (exit 2)
when the compile cache cannot be written, unless --no-cache.
"""

import argparse
import logging
import os
import signal
import sys
import threading

from compiler import plugins
from compiler.service import auth, logs
from compiler.service.limits import MIB, Limits
from compiler.service.server import CompilerServer, Options

log = logging.getLogger("cake.service")

# The measurement backend, named rather than imported: the compiler never imports the runtime or kernels.
MEASURE_BACKEND = "kernels.tasks:measurer"


def measurer_from(args):
    """The measurer --measure asks for, its first worker started (so a host without a GPU fails now); or None."""
    if not args.measure:
        return None
    try:
        measurer = plugins.load(args.measure_backend)()
        measurer.start()
    except Exception as e:  # noqa: BLE001  (no GPU, no torch, a bad name: the message says which)
        raise RuntimeError("--measure: %s: %s" % (type(e).__name__, e)) from None
    return measurer


def parse_args(argv):
    d = Options()
    lim = Limits()
    ap = argparse.ArgumentParser(prog="cake-server", description=__doc__.splitlines()[0])
    ap.add_argument("--host", default=d.host, help="address to bind (default %(default)s: loopback only)")
    ap.add_argument("--port", type=int, default=d.port, help="port (0: any free port; default %(default)s)")
    ap.add_argument("--max-message-bytes", type=int, default=d.max_message_bytes,
                    help="largest request or response, in bytes (default %(default)s)")
    ap.add_argument("--compile-workers", type=int, default=d.compile_workers,
                    help="compiles run at once (default %(default)s)")
    ap.add_argument("--compile-queue", type=int, default=d.compile_queue,
                    help="compiles that may wait for a worker; beyond it RESOURCE_EXHAUSTED (default %(default)s)")
    ap.add_argument("--rpc-threads", type=int, default=d.rpc_threads,
                    help="threads serving calls (default %(default)s)")
    ap.add_argument("--workers", type=int, default=d.workers,
                    help="worker processes that parse, verify, analyze and lower (default: the CPU count, %(default)s)")
    ap.add_argument("--max-program-bytes", type=int, default=lim.program_bytes,
                    help="largest program of a request (default %(default)s)")
    ap.add_argument("--parse-seconds", type=float, default=lim.parse_seconds,
                    help="time a request's parse (or its rules' loading) may take (default %(default)s)")
    ap.add_argument("--verify-seconds", type=float, default=lim.verify_seconds,
                    help="time verification, the cost analysis, lowering and a cost-model refit may each take"
                         " (default %(default)s)")
    ap.add_argument("--nvcc-seconds", type=float, default=lim.nvcc_seconds,
                    help="time one nvcc run may take (default %(default)s)")
    ap.add_argument("--worker-memory-mb", type=int, default=lim.worker_memory_bytes // MIB,
                    help="address space of a worker process: the memory one request may use (default %(default)s)")
    ap.add_argument("--grace-seconds", type=float, default=30.0,
                    help="time in-flight calls get to finish on SIGTERM (default %(default)s)")
    ap.add_argument("--tls-cert", help="PEM certificate chain: serve TLS")
    ap.add_argument("--tls-key", help="PEM private key of --tls-cert")
    ap.add_argument("--token-file", help="file holding the bearer token calls must carry (default: $CAKE_TOKEN)")
    ap.add_argument("--insecure-allow-remote", action="store_true",
                    help="allow a non-loopback --host without TLS or a token")
    ap.add_argument("--cache-dir", help="compile cache directory (default: compile/ under $CAKE_CACHE_DIR, $XDG_CACHE_HOME/cake"
                         " or ~/.cache/cake)")
    ap.add_argument("--no-cache", action="store_true", help="run without a compile cache (every Compile runs nvcc)")
    ap.add_argument("--measure", action="store_true",
                    help="serve Measure: check and time kernels on this host's GPU in isolated workers (default: off)")
    ap.add_argument("--measure-backend", default=MEASURE_BACKEND,
                    help="factory of the measurer, 'package.module:function' (default: %(default)s)")
    ap.add_argument("--parent-pid", type=int, default=0,
                    help="stop as on SIGTERM once the process with this id is no longer this one's parent (the agent or "
                         "test that started the server was killed): no server outlives its owner")
    ap.add_argument("--log-level", default="info")
    args = ap.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    if args.no_cache and args.cache_dir:
        ap.error("--no-cache and --cache-dir exclude each other")
    for flag in ("workers", "max_program_bytes", "parse_seconds", "verify_seconds", "nvcc_seconds", "worker_memory_mb"):
        if getattr(args, flag) <= 0:
            ap.error("--%s must be positive" % flag.replace("_", "-"))
    return args


def options_from(args):
    """Server Options from parsed flags; ValueError when the bind address needs credentials it lacks."""
    token = os.environ.get("CAKE_TOKEN") or None
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
        if not token:
            raise ValueError("--token-file %s is empty" % args.token_file)
    credentials = auth.server_credentials(args.tls_cert, args.tls_key) if args.tls_cert else None
    if not auth.is_loopback(args.host) and not (credentials or token or args.insecure_allow_remote):
        raise ValueError(
            "refusing to serve %s without TLS or a bearer token: anyone who can reach it could run the "
            "compiler; pass --tls-cert/--tls-key, --token-file (or $CAKE_TOKEN), or --insecure-allow-remote"
            % args.host
        )
    return Options(
        host=args.host,
        port=args.port,
        max_message_bytes=args.max_message_bytes,
        compile_workers=args.compile_workers,
        compile_queue=args.compile_queue,
        rpc_threads=args.rpc_threads,
        workers=args.workers,
        limits=Limits(
            program_bytes=args.max_program_bytes,
            parse_seconds=args.parse_seconds,
            verify_seconds=args.verify_seconds,
            nvcc_seconds=args.nvcc_seconds,
            worker_memory_bytes=args.worker_memory_mb * MIB,
        ),
        token=token,
        credentials=credentials,
        cache_dir=args.cache_dir,
        no_cache=args.no_cache,
        measurer=measurer_from(args),
    )


def main(argv=None):
    args = parse_args(argv)
    logs.setup(args.log_level)
    try:
        server = CompilerServer(options_from(args))
        port = server.start()
    except (ValueError, OSError, RuntimeError) as e:
        log.error("cannot start: %s", e)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    # A parent may hand us these signals blocked; Python's handlers never see a blocked signal.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    print(port, flush=True)
    log.info("serving", extra={"fields": {
        "event": "serving", "host": args.host, "port": port, "tls": bool(args.tls_cert),
        "token": server.options.token is not None, "cache_dir": server.cache_dir,
        "build_dir": server.builds.directory, "workers": server.options.workers}})
    # Python runs signal handlers in the main thread only, between bytecodes: a signal the kernel delivers
    # to one of gRPC's threads does not wake a long wait here, so wake every second to let the handler run.
    while not stop.wait(1.0):
        if args.parent_pid and os.getppid() != args.parent_pid:
            log.info("parent gone", extra={"fields": {"event": "parent_gone", "parent_pid": args.parent_pid}})
            break
    log.info("shutting down", extra={"fields": {"event": "shutdown", "grace_seconds": args.grace_seconds}})
    drained = server.shutdown(args.grace_seconds)
    log.info("stopped", extra={"fields": {"event": "stopped", "drained": drained}})
    if not drained:
        # A compile outlived the grace period: do not let its thread hold the exit.
        logging.shutdown()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
