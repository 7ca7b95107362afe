"""cake: verify, analyze, compile, lower and format CAKE IR text files.

    cake verify FILE.cake...            diagnostics as file:line:col: error[ID]: message
    cake analyze FILE.cake [--shape N=4096] [--device H200]
    cake compile FILE.cake [-o OUT.cubin] [--ptx OUT.ptx]
    cake lower FILE.cake [-o OUT.cu] [--metadata OUT.launch.pb]
    cake fmt FILE.cake... [-i | --check]

Every step verifies first. `--target` retargets the program (default: its own
target); `--json` prints the result as JSON and `--sarif` the diagnostics as SARIF
2.1.0 on stdout. Installed as the `cake` console script; in the monorepo
`bazel run //compiler:cake -- verify FILE.cake`.
"""

import argparse
import difflib
import json
import os
import sys
import tempfile
import traceback

from cake.compiler.v1 import diagnostics_pb2

from compiler.build import nvcc
from compiler.cli import actions, output
from compiler.ir.text import ParseError
from compiler.ir.text.comments import format_text
from compiler.targets import TARGETS
from compiler.version import VERSION

EXIT_OK = 0
EXIT_INVALID = 1  # the program has errors, is not CAKE IR, or (fmt --check) is not formatted
EXIT_USAGE = 2  # bad flags, a missing or unreadable file, an unknown target or device
EXIT_INTERNAL = 3  # a bug in CAKE (the traceback is kept in a file the message names)
EXIT_TOOLCHAIN = 4  # compile needs nvcc and there is none

EPILOG = """exit status: 0 success (warnings allowed); 1 invalid program (errors reported, not CAKE IR,
or fmt --check found files to reformat); 2 usage error (flags, missing file, unknown target or
device); 3 internal error in CAKE; 4 nvcc not found (compile)."""


class UsageError(Exception):
    """Bad input that is not the program's fault: a missing file, an unknown target or device."""


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise UsageError("%s: no such file" % path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError("%s: cannot read it: %s" % (path, e)) from None


def _load(path, target):
    """(Program, []) or (None, [syntax diagnostic])."""
    try:
        return actions.parse(_read(path), path, target)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _rules():
    from compiler.verify import RULES

    rules = {r.id: (r.doc, r.fix_hint) for r in RULES}
    rules[actions.SYNTAX_ID] = ("The file is not CAKE IR text (docs/ir_text.md gives the syntax).", "Fix the syntax at the location.")
    rules[actions.ANALYSIS_ID] = ("The cost analysis could not run on the kernel.", "Bind the symbol or fix the value named.")
    return rules


def _report(args, results, extra=None):
    """Print (filename, diagnostics) results as asked; the exit status they imply."""
    if args.sarif:
        print(json.dumps(output.sarif(results, _rules()), indent=2))
    elif args.json:
        files = [dict({"file": f, "valid": not actions.has_errors(ds), "diagnostics": [output.to_dict(d) for d in ds]},
                      **((extra or {}).get(f, {}))) for f, ds in results]
        print(json.dumps({"results": files} if args.command in ("verify", "fmt") else files[0], indent=2))
    else:
        for filename, diags in results:
            for d in diags:
                sys.stderr.write(output.gcc(d, filename) + "\n")
        counts = [sum(d.severity == s for _, ds in results for d in ds)
                  for s in (diagnostics_pb2.SEVERITY_ERROR, diagnostics_pb2.SEVERITY_WARNING)]
        if any(counts):
            sys.stderr.write("cake: %d error(s), %d warning(s)\n" % tuple(counts))
    return EXIT_INVALID if any(actions.has_errors(ds) for _, ds in results) else EXIT_OK


def cmd_verify(args):
    results = []
    for path in args.files:
        program, diags = _load(path, args.target)
        results.append((path, diags if program is None else actions.verify(program)))
    return _report(args, results)


def _shapes(pairs):
    out = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value.lstrip("-").isdigit():
            raise UsageError("--shape takes NAME=INTEGER, got %r" % pair)
        out[name] = int(value)
    return out


def cmd_analyze(args):
    from compiler.service import catalog

    if args.device and args.device not in catalog.device_names():
        raise UsageError("unknown device %r; known: %s" % (args.device, ", ".join(catalog.device_names())))
    program, diags = _load(args.file, args.target)
    report = None
    if program is not None:
        diags, report = actions.analyze(program, _shapes(args.shape), args.device)
    status = _report(args, [(args.file, diags)], {args.file: {"report": output.to_dict(report) if report else None}})
    if report is not None and not (args.json or args.sarif):
        print("%s: predicted %.3f us on %s, bound by %s" % (args.file, report.predicted_seconds * 1e6, report.device,
                                                            report.bottleneck))
        print("  blocks %d (%.2f waves), %d per SM (limited by %s), %d threads, %d B shared, ~%d registers/thread"
              % (report.blocks, report.waves, report.blocks_per_sm, report.occupancy_limiter, report.threads_per_block,
                 report.shared_bytes_per_block, report.registers_per_thread))
        for q in report.flops:
            print("  flops %-10s %.4g" % (q.name, q.value))
        for q in report.bytes:
            print("  bytes %-10s %.4g" % (q.name, q.value))
        print("  shapes: %s" % ", ".join("%s=%d" % kv for kv in sorted(report.shapes.items())))
    return status


def _default_output(path, target, suffix):
    stem = os.path.splitext(path)[0]
    return "%s.%s%s" % (stem, target, suffix)


def cmd_compile(args):
    program, diags = _load(args.file, args.target)
    compiled = None
    if program is not None:
        try:
            diags, compiled = actions.compile(program)
        except nvcc.NvccNotFound as e:
            sys.stderr.write("cake: cannot compile: %s\n" % e)
            return EXIT_TOOLCHAIN
    extra = {}
    if compiled is not None:
        out = args.output or _default_output(args.file, compiled.target, ".cubin")
        _write(out, compiled.cubin)
        if args.ptx:
            _write(args.ptx, compiled.ptx.encode())
        r = compiled.resources
        extra = {args.file: {"cubin": out, "target": compiled.target, "ir_hash": compiled.ir_hash,
                             "resources": output.to_dict(r), "cache_hit": compiled.cache_hit}}
        if not (args.json or args.sarif):
            print("%s: wrote %s (%s, %d bytes): %d registers, %d B spilled, %d B static shared%s"
                  % (args.file, out, compiled.target, len(compiled.cubin), r.registers,
                     r.spill_store_bytes + r.spill_load_bytes, r.static_shared_bytes,
                     ", from the compile cache" if compiled.cache_hit else ""))
    return _report(args, [(args.file, diags)], extra)


def cmd_lower(args):
    program, diags = _load(args.file, args.target)
    ctx = None
    if program is not None:
        diags, ctx = actions.lower(program)
    extra = {}
    if ctx is not None:
        if args.output:
            _write(args.output, ctx.source.encode())
        elif not (args.json or args.sarif):
            sys.stdout.write(ctx.source)
        if args.metadata:
            _write(args.metadata, ctx.launch.SerializeToString(deterministic=True))
        extra = {args.file: {"cuda_source": None if args.output else ctx.source, "output": args.output,
                             "launch": output.to_dict(ctx.launch)}}
    return _report(args, [(args.file, diags)], extra)


def cmd_fmt(args):
    if len(args.files) > 1 and not (args.in_place or args.check):
        raise UsageError("several files: pass -i to rewrite them or --check to list those that need it")
    results, changed = [], []
    for path in args.files:
        text = _read(path)
        try:
            formatted = format_text(text, path)
        except ParseError:
            results.append((path, _load(path, None)[1]))
            continue
        results.append((path, []))
        if formatted != text:
            changed.append(path)
            if args.in_place:
                _write(path, formatted.encode())
            elif args.check:
                sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), formatted.splitlines(True),
                                                           path, path + " (formatted)"))
        if not (args.in_place or args.check or args.json or args.sarif):
            sys.stdout.write(formatted)
    status = _report(args, results)
    if args.check and changed:
        sys.stderr.write("cake fmt: %d file(s) would be reformatted: %s\n" % (len(changed), " ".join(changed)))
        return EXIT_INVALID
    return status


def _write(path, data):
    """Write `data` to `path` atomically (a reader never sees half a file)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".cake-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parser():
    ap = argparse.ArgumentParser(prog="cake", description=__doc__.splitlines()[0], epilog=EPILOG)
    ap.add_argument("--version", action="version", version="cake %s" % VERSION)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name, help_, files="one"):
        p = sub.add_parser(name, help=help_, description=help_, epilog=EPILOG)
        if files == "many":
            p.add_argument("files", nargs="+", metavar="FILE.cake")
        else:
            p.add_argument("file", metavar="FILE.cake")
        if name != "fmt":
            p.add_argument("--target", choices=list(TARGETS), default=None,
                           help="compile for this SM target (default: the program's own target)")
        kind = p.add_mutually_exclusive_group()
        kind.add_argument("--json", action="store_true", help="print the result as JSON on stdout (default: text)")
        kind.add_argument("--sarif", action="store_true", help="print the diagnostics as SARIF 2.1.0 on stdout")
        return p

    command("verify", "run the verifier's rules and print their diagnostics", files="many")
    p = command("analyze", "predict the kernel's cost (verifying first)")
    p.add_argument("--shape", action="append", metavar="NAME=VALUE",
                   help="value of a shape symbol, repeatable (default: representative values)")
    p.add_argument("--device", default=None,
                   help="device name or target/name, e.g. H200 or sm_90a/H200 (default: the target's default device)")
    p = command("compile", "verify, lower and build the kernel with nvcc into a cubin")
    p.add_argument("-o", "--output", help="cubin to write (default: FILE.<target>.cubin beside the input)")
    p.add_argument("--ptx", help="also write the PTX here (default: not written)")
    p = command("lower", "verify and lower the kernel to CUDA C++")
    p.add_argument("-o", "--output", help="CUDA source to write (default: stdout)")
    p.add_argument("--metadata", help="also write the launch metadata (LaunchMetadata, binary) here (default: not written)")
    p = command("fmt", "print the canonical text form, keeping comments", files="many")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-i", "--in-place", action="store_true", help="rewrite the files (default: print to stdout)")
    mode.add_argument("--check", action="store_true", help="print a diff and exit 1 when a file is not formatted")
    return ap


COMMANDS = {"verify": cmd_verify, "analyze": cmd_analyze, "compile": cmd_compile, "lower": cmd_lower, "fmt": cmd_fmt}


def main(argv=None):
    # `bazel run` starts in the runfiles tree: read the user's relative paths from where they ran it.
    if os.environ.get("BUILD_WORKING_DIRECTORY"):
        os.chdir(os.environ["BUILD_WORKING_DIRECTORY"])
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UsageError as e:
        sys.stderr.write("cake: %s\n" % e)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001  (a bug: say so plainly, keep the traceback, exit distinctly)
        fd, path = tempfile.mkstemp(prefix="cake-internal-error-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(traceback.format_exc())
        sys.stderr.write("cake: internal error (a bug in CAKE, not in your program): %s: %s\n"
                         "cake: the traceback is in %s; please report it\n" % (type(e).__name__, e, path))
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
