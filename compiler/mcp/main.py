"""cake-mcp: the CAKE MCP server over stdio (default) or streamable HTTP.

    cake-mcp                                         # stdio: what a coding agent spawns
    cake-mcp --transport streamable-http --port 8765 # http://127.0.0.1:8765/mcp
    cake-mcp --measure                               # on a GPU host: also the measure tool

In the monorepo: `bazel run //compiler:mcp -- ...` or `python -m compiler.mcp.main`.
docs/mcp.md has configuration snippets for coding agents.
"""

import argparse
import sys

from compiler import plugins
from compiler.mcp import server as server_

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MEASURE_BACKEND = "kernels.tasks:measurer"


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="cake-mcp", description=__doc__.splitlines()[0])
    ap.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                    help="how clients connect (default: %(default)s)")
    ap.add_argument("--host", default="127.0.0.1", help="address for streamable-http (default: %(default)s)")
    ap.add_argument("--port", type=int, default=8765, help="port for streamable-http (default: %(default)s)")
    ap.add_argument("--allow-remote", action="store_true",
                    help="allow a non-loopback --host (anyone who reaches it can run the compiler; default: refused)")
    ap.add_argument("--measure", action="store_true",
                    help="offer the measure tool: needs a GPU (default: off)")
    ap.add_argument("--measure-backend", default=MEASURE_BACKEND,
                    help="factory of the measurer, 'package.module:function' (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.transport == "streamable-http" and args.host not in LOOPBACK and not args.allow_remote:
        ap.error("refusing to serve %s: pass --allow-remote to listen beyond this machine" % args.host)
    return args


def main(argv=None):
    args = parse_args(argv)
    measurer = None
    if args.measure:
        try:
            measurer = plugins.load(args.measure_backend)()
            measurer.start()
        except Exception as e:  # noqa: BLE001  (no GPU, no torch, a bad backend name: say which and stop)
            sys.stderr.write("cake-mcp: cannot offer measure: %s: %s\n" % (type(e).__name__, e))
            return 2
    server = server_.create(measurer)
    try:
        if args.transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=args.host, port=args.port)
    finally:
        if measurer is not None:
            measurer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
