"""Re-tune the 256-wide feature tile's buckets at D off the tile, on every variant of the tile.

The validation's B 4 N 805273 K 53 D 216 ran 0.957x flashlib on its bucket's entry
(D4/K2/R5), which, like every entry of the 256-wide tile, was timed at D = 256 only
(the bucket's representative) and on the cost model's top three or the consumer counts
tune_cover added. A bucket of that tile holds D of 136-256, where TMA zero-fills up to
120 features of every row and the rows are not 128-byte multiples.
One run: for each bucket of BUCKETS (the one above and its neighbours in K and B*N that
no run re-tuned at D off the tile), two shapes inside it (tune_narrow.bucket_shapes: K
at 1/4 and 3/4 of the bucket's log range, B*N at its centre) with D at 200 and 232
(neither a shape the validation draws: bench_dispatch leaves out every shape an entry
lists), every variant of the 256-wide tile timed at both by runtime.timing.time_kernel
(cold L2, CUDA events, median, outputs verified; tune_narrow.tune); the winner has the
smallest geometric mean of its times over the fastest at each shape, and the entry it
replaces stays under "earlier". The databases are written to --out-dir and, with
--install, into kernels/kmeans/tuning (what a validation in the same run then reads).

    python3 -m kernels.kmeans.tune_wide --out-dir $OUT [--deadline-s 40] [--install]
"""

import argparse
import time

from kernels.kmeans import bench_dispatch, tune_narrow, variants

BUCKETS = ("D4/K2/R5", "D4/K2/R4", "D4/K2/R6", "D4/K1/R5", "D4/K3/R5")
OFF_TILE_D = (200, 232)
HOW = ("runtime timer (tune_wide): geometric mean over the entry's shapes (D off the tile) of every variant of the "
       "256-wide tile")


def plan(dbs, keys=BUCKETS):
    """(key, database name or None, shapes, candidates) per bucket of `keys`."""
    out = []
    for key in keys:
        di, ki, ri = (int(part[1:]) for part in key.split("/"))
        shapes = [dict(s, D=d) for s, d in zip(tune_narrow.bucket_shapes(di, ki, ri), OFF_TILE_D)]
        shapes = [s for s in shapes if bench_dispatch.in_caps(s)]
        if not shapes:
            continue
        owner = next((name for name, db in dbs.items() if db.lookup(key)), None)
        out.append((key, owner, shapes, list(variants.candidates(shapes[0]["D"]))))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--deadline-s", type=float, default=40.0)
    ap.add_argument("--install", action="store_true", help="also write the databases into kernels/kmeans/tuning")
    args = ap.parse_args()
    t_start = time.time()
    log, env, dbs = tune_narrow.session(args.out_dir, "kmeans_wide.log", t_start)
    items = plan(dbs)
    log("%d buckets to tune, %d timings planned" % (len(items), sum(len(i[2]) * len(i[3]) for i in items)))
    tuned = tune_narrow.tune(dbs, items, env, t_start + args.deadline_s, log)
    for row in tuned:
        entry = dbs[row["database"] or "h200_rest.json"].entries.get(row["bucket"])
        if entry and row["variant"]:
            entry["how"] = HOW
    tune_narrow.finish(args, dbs, env, t_start, items, tuned, log, "kernels/kmeans/tune_wide.py",
                       __doc__.split("One run: ")[1].split("The databases")[0].strip(), "kmeans_wide_h200.json")


if __name__ == "__main__":
    main()
