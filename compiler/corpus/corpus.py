"""The good corpus: every seed schedule of kernels/, by name, and its canonical text in good/.

Each entry builds one Kernel with its default parameters; good/<name>.cake is that
kernel printed by compiler.ir.text.printer. The files are what people and agents read
(docs/ir.md quotes them) and what text-form and verifier tests load; corpus_test
keeps them equal to the builders. After changing a schedule, regenerate them:

    python -m compiler.corpus.corpus --write

This is the one compiler package that imports kernels/: the corpus is made of them.
"""

import argparse
import os
import sys

from compiler.ir.text import print_kernel
from kernels.gemm.naive import gemm_naive
from kernels.gemm.schedules import gemm_sm80, gemm_sm90a, gemm_sm100a
from kernels.kda import naive as kda_naive
from kernels.kda import schedules as kda
from kernels.kmeans import naive as kmeans_naive
from kernels.kmeans import schedules as kmeans
from kernels.kmeans import tuned as kmeans_tuned
from kernels.knn import naive as knn_naive
from kernels.knn import schedules as knn
from kernels.knn import wide_select as knn_select

GOOD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "good")

# name -> builder of the default schedule; at least one tiled GEMM per target family,
# one schedule of each of the three proving kernels, the tuned KMeans kernels the
# API runs (kernels/kmeans/api.py: the assignment at its D = 128 parameters, the streamed one at 512), the
# KNN kernels (kernels/knn: the tuned score kernel and the merges at k = 10, the small-Q,
# sm_80 and sm_100a score kernels, the wide-k filter and select), the KDA intra kernel with FlashKDA's
# in-kernel options (l2norm, gate, beta sigmoid), and the naive seeds the agent starts from
# (kernels/*/naive.py: one warpgroup, plain loads, no ring).
GOOD = {
    "gemm_sm80": gemm_sm80,
    "gemm_sm90a": gemm_sm90a,
    "gemm_sm100a": gemm_sm100a,
    "gemm_naive": gemm_naive,
    "kmeans_assign_sm80": kmeans.assign_sm80,
    "kmeans_assign_sm90a": kmeans.assign_sm90a,
    "kmeans_assign_sm100a": kmeans.assign_sm100a,
    "kmeans_assign_naive": kmeans_naive.assign_naive,
    "kmeans_update": kmeans.update,
    "kmeans_finalize": kmeans.finalize,
    "kmeans_assign_sm90a_tuned": kmeans_tuned.assign_sm90a_tuned,
    "kmeans_assign_sm90a_streamed": kmeans_tuned.assign_sm90a_streamed,
    "kmeans_update_sorted": kmeans_tuned.update_sorted,
    "knn_rows_sm90a": knn.rows_sm90a,
    "knn_cols_sm90a": knn.cols_sm90a,
    "knn_merge": knn.merge,
    "knn_merge_single": lambda: knn.merge(single=True),
    "knn_merge_fanin": knn.merge_fanin,
    "knn_rows_sm80": knn.rows_sm80,
    "knn_rows_sm100a": knn.rows_sm100a,
    "knn_filter_sm90a": lambda: knn.rows_sm90a(collect=True),
    "knn_filter_sm80": lambda: knn.rows_sm80(collect=True),
    "knn_filter_sm100a": lambda: knn.rows_sm100a(collect=True),
    "knn_select": knn_select.select_kernel,
    "knn_rows_naive": knn_naive.rows_naive,
    "kda_intra_sm90a": kda.intra_sm90a,
    "kda_intra_fla_sm90a": lambda: kda.intra_sm90a(gate="sigmoid", g_dtype="bf16", l2norm=True, beta_sigmoid=True),
    "kda_chain_sm90a": kda.chain_sm90a,
    "kda_recurrent_naive": kda_naive.recurrent_naive,
}


def build(name):
    """The Kernel proto of corpus entry `name`."""
    return GOOD[name]()


def path(name):
    """Where the canonical text of `name` lives."""
    return os.path.join(GOOD_DIR, name + ".cake")


def text(name):
    """The canonical text of `name`, as good/<name>.cake must hold it."""
    return print_kernel(build(name))


def stale():
    """Names whose file is missing or differs from the builder, and .cake files no entry owns."""
    out = [n for n in GOOD if not os.path.exists(path(n)) or open(path(n)).read() != text(n)]
    owned = {n + ".cake" for n in GOOD}
    out += [f for f in sorted(os.listdir(GOOD_DIR)) if f.endswith(".cake") and f not in owned]
    return out


def write():
    """Rewrite every good/<name>.cake from its builder and delete files no entry owns."""
    os.makedirs(GOOD_DIR, exist_ok=True)
    for name in GOOD:
        with open(path(name), "w") as f:
            f.write(text(name))
    owned = {n + ".cake" for n in GOOD}
    for f in os.listdir(GOOD_DIR):
        if f.endswith(".cake") and f not in owned:
            os.remove(os.path.join(GOOD_DIR, f))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate good/*.cake from the builders")
    args = parser.parse_args(argv)
    if args.write:
        write()
        print("wrote %d programs to %s" % (len(GOOD), GOOD_DIR))
        return 0
    drift = stale()
    for name in drift:
        print("stale: %s (run python -m compiler.corpus.corpus --write)" % name)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
