"""`bazel run //agent:promote`: write what the agent learned into the checkout's agent/knowledge, for review.

    bazel run //agent:promote                 # every accepted change not yet in agent/knowledge
    bazel run //agent:promote -- --dry-run    # list them, write nothing
    python3 -m agent.promote [--runs-root DIR] [--knowledge-dir DIR]

Runs record accepted proposals in the learned store under the runs root (see
agent/places.py and learn/knowledge.py), never in the checkout. Promoting writes
them as the next versions of their files (and the programs a learned rule was gated
against under gate/), in the files' stable format, so `git diff agent/knowledge`
shows exactly what changed; commit it like any other change. Promoting again finds
nothing new.
"""

import argparse
import sys

from agent import places as places_mod
from agent.evolve import add_place_flags


def main(argv=None):
    p = argparse.ArgumentParser(prog="promote", description=__doc__.split("\n\n")[0])
    add_place_flags(p)
    p.add_argument("--dry-run", action="store_true", help="list what would be promoted; write nothing")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        where = places_mod.resolve(args.runs_root, args.knowledge_dir)
    except places_mod.PlaceError as e:
        print("promote: %s" % e, file=sys.stderr)
        return 2
    kb = where.knowledge()
    pending = kb.pending()
    if not pending:
        print("nothing to promote: %s holds every change accepted in %s" % (kb.base, kb.learned))
        return 0
    for entry in pending:
        print("%s %s: %s" % (entry["file"], entry["id"], entry["changelog"]["summary"]))
    if args.dry_run:
        print("%d change(s) to promote (dry run: nothing written)" % len(pending))
        return 0
    kb.promote()
    print("promoted %d change(s) into %s; review them with: git diff -- %s" % (len(pending), kb.base, kb.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
