"""The consistency of the verifier, the cost model and lowering on a large sample of mutations.

    python -m compiler.testing.bench_consistency [--mutants 20000] [--seed 1] [--out benchmarks/results/consistency.json]

Runs compiler/testing/consistency.py's judgement over the good corpus and `mutants`
resource, target, launch and top-k list mutations of it (compiler/consistency_test.py runs a CI-sized
sample) and records how many fell in the domain, how many the stages accepted or refused,
which verifier errors the refusals carried, and every disagreement (none expected).
"""

import argparse
import collections
import json
import os
import platform
import time

from compiler.corpus import corpus
from compiler.testing import consistency, resource_mutations

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run(mutants, seed):
    bases = {name: corpus.build(name) for name in corpus.GOOD}
    counts, errors, disagreements = collections.Counter(), collections.Counter(), []
    start = time.monotonic()
    for name, kernel in list(bases.items()) + list(resource_mutations.mutants(bases, mutants, seed)):
        v = consistency.judge(kernel)
        counts["outside the domain" if not v.in_domain else "accepted" if not v.errors else "refused"] += 1
        if v.in_domain:
            errors.update(v.errors)
        why = consistency.disagreement(v)
        if why:
            disagreements.append({"kernel": name, "why": why})
    return {
        "benchmark": "compiler/testing/bench_consistency.py",
        "what": "verifier accepts iff the cost model and lowering find it fits, over the good corpus and mutations",
        "mutants": mutants,
        "seed": seed,
        "kernels": sum(counts.values()),
        "counts": dict(counts),
        "refusals_by_error": dict(sorted(errors.items())),
        "disagreements": disagreements,
        "seconds": round(time.monotonic() - start, 1),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "consistency.json"))
    args = ap.parse_args(argv)
    result = run(args.mutants, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print("%d kernels, %s; %d disagreements -> %s" % (result["kernels"], result["counts"], len(result["disagreements"]),
                                                       args.out))
    return 1 if result["disagreements"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
