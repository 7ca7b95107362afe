"""Every verdict the verifier gives, as text: to diff byte for byte across a change that must change none (a speed-up).

    python -m compiler.testing.verdicts mutants /tmp/mutants.bin   # draw the mutant set once (a minute or two)
    python -m compiler.testing.verdicts dump /tmp/mutants.bin > before.txt
    ... the change ...
    python -m compiler.testing.verdicts dump /tmp/mutants.bin > after.txt && cmp before.txt after.txt

The kernels: every corpus program (good, neighbours, bad; verified with its source map), then the mutants the
verifier's property tests draw, saved once so that both dumps read the same ones: compiler/verify/mutation_test.py's
(mutated corpus programs, arbitrary kernels), compiler/verify/class_mutation_test.py's (each rule's breaking edits,
renames, reorders, restagings) and compiler/consistency_test.py's resource mutations. Per kernel: every diagnostic
(text_format: severity, id, category, path, location, message, notes, fix hint; an internal error's random incident
id blanked), then the protocol model's result run on it whether or not static errors gate it off (its violation's
kind, path, message, notes and hint, the inputs it ran, why it skipped, or the exception it raised).
"""

import argparse
import glob
import os
import pickle
import re
import sys

from google.protobuf import text_format

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
_INCIDENT = re.compile(r"incident [0-9a-f]{12}")


def corpus_programs():
    """[(name, text)] of every corpus program: good/, neighbours/, then bad/."""
    out = []
    for kind in ("good", "neighbours", "bad"):
        for path in sorted(glob.glob(os.path.join(ROOT, "compiler", "corpus", kind, "*.cake"))):
            with open(path) as f:
                out.append(("%s/%s" % (kind, os.path.basename(path)), f.read()))
    return out


def _drawn(strategy, count):
    """The first `count` examples hypothesis draws from `strategy` (derandomized: the same ones every time)."""
    from hypothesis import HealthCheck, given, settings

    out = []

    @settings(max_examples=count, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(kernel):
        out.append(kernel.SerializeToString())

    collect()
    return out


def draw_mutants():
    """[(name, serialized Kernel)] of the property tests' mutants (their default example counts)."""
    from compiler.corpus import corpus
    from compiler.testing import class_mutations as cm
    from compiler.testing import resource_mutations, strategies
    from compiler.testing.mutations import mutated
    from compiler.verify import class_mutation_test, mutation_test
    from cake.ir.v1 import ir_pb2

    out = []
    for i, b in enumerate(_drawn(mutated(mutation_test.BASES), mutation_test.EXAMPLES)):
        out.append(("mutated/%d" % i, b))
    for i, b in enumerate(_drawn(strategies.messages(ir_pb2.Kernel), mutation_test.EXAMPLES // 3)):
        out.append(("arbitrary/%d" % i, b))
    good = class_mutation_test.GOOD
    for rule_id in sorted(cm.BREAKING):
        for i, b in enumerate(_drawn(cm.broken(cm.applicable(good, rule_id), rule_id), class_mutation_test.EXAMPLES)):
            out.append(("broken/%s/%d" % (rule_id, i), b))
    for strategy in (cm.renamed, cm.reordered, cm.restaged):
        for i, b in enumerate(_drawn(strategy(good), class_mutation_test.EXAMPLES)):
            out.append(("%s/%d" % (strategy.__name__, i), b))
    for i, k in enumerate(good):
        out.append(("good/%d" % i, k.SerializeToString()))
    bases = {name: corpus.build(name) for name in corpus.GOOD}
    for name, kernel in resource_mutations.mutants(bases, 1200, seed=0):
        out.append(("resource/%s" % name, kernel.SerializeToString()))
    return out


def _model(ctx):
    from compiler.verify.protocol import simulate

    try:
        res = simulate.run(ctx)
    except Exception as e:  # noqa: BLE001  (the ungated model may fail on a malformed kernel: say how)
        return "model raised %s" % type(e).__name__
    v = res.violation
    lines = ["model skipped=%r scenarios=%r" % (res.skipped, res.scenarios)]
    if v is not None:
        lines.append("model violation %s at %s: %s | notes %r | hint %r" % (v.kind, v.path, v.message, v.notes, v.hint))
    return "\n".join(lines)


def verdict(name, kernel, source_map=None):
    """The text of `kernel`'s verdict: its diagnostics, then the model's result."""
    from compiler.verify import verify
    from compiler.verify.context import Context

    lines = ["== %s" % name]
    for d in verify(kernel, source_map):
        lines.append(_INCIDENT.sub("incident <id>", text_format.MessageToString(d, as_one_line=True)))
    try:
        ctx = Context(kernel, source_map)
    except Exception as e:  # noqa: BLE001
        lines.append("context raised %s" % type(e).__name__)
    else:
        lines.append(_model(ctx))
    return "\n".join(lines) + "\n"


def dump(mutants_path, out):
    from cake.ir.v1 import ir_pb2
    from compiler.ir.text import parse_kernel

    for name, text in corpus_programs():
        parsed = parse_kernel(text, name)
        out.write(verdict(name, parsed.kernel, parsed.source_map))
    if mutants_path:
        with open(mutants_path, "rb") as f:
            mutants = pickle.load(f)
        for name, data in mutants:
            kernel = ir_pb2.Kernel()
            kernel.ParseFromString(data)
            out.write(verdict(name, kernel))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("mutants").add_argument("out")
    d = sub.add_parser("dump")
    d.add_argument("mutants", nargs="?")
    args = parser.parse_args(argv)
    if args.command == "mutants":
        mutants = draw_mutants()
        with open(args.out, "wb") as f:
            pickle.dump(mutants, f)
        print("%d mutants -> %s" % (len(mutants), args.out), file=sys.stderr)
    else:
        dump(args.mutants, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
