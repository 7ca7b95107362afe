"""Build the wheel from a checkout (what //python:wheel runs): python -m cake_build.main --out-dir DIR [--bundle F]..."""

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a script (Bazel's py_binary): make `cake_build` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cake_build import build  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cake_build", description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="the monorepo checkout (default: the current directory)")
    ap.add_argument("--out-dir", required=True, help="where the wheel is written")
    ap.add_argument("--bundle", action="append", default=[], help="a prebuilt store (.zip) to ship (repeatable)")
    args = ap.parse_args(argv)
    print(build(os.path.abspath(args.root), args.out_dir, args.bundle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
