"""Wide-k KNN (33 <= k <= 256) in CAKE IR: a seeded filter pass into candidate buffers, then an exact select.

Register lists hold at most plan.MAX_K entries per thread, so k past them runs in three passes:

1. seeding: the k <= 32 path's seeding kernel (rows_sm90a's minima form at k' = 32, widek.seed_plan)
   over a sample of the database's first rows (`sample_rows`), then (torch) the k-th best of the union
   of its partial lists' entries (distinct rows, so at least k rows score at least that well; the
   (k + 1)-th for self-KNN, whose own row the sample may hold), loosened by the rounding bound
   (`rounding_slack`) and one ulp;
2. filter: the score kernel's collect form (schedules.rows_sm90a(collect=True), TopKCollect) over the
   whole database appends every (score, row) that beats the query's bound to the query's candidate
   buffer (cand_v, cand_i [B, Q, C]) and counts them (count [B, Q]; past C only the count grows);
3. select: `select_kernel` (TopKSelect), a block per query: the buffer's candidates sorted in shared
   memory, the k best rescored exactly in f32 from the rows, sorted again (ties to the smaller index).

Every row that could be among the k best beats the bound, so the result is what the k <= 32 path
computes; a query whose buffer overflowed (count > C) is searched again on the exact torch path
(`search_into`), so results are always exact. The kernels are specialised coarsely: the filter per
(layout parameters, metric, dtype, exclude_self), the select per (capacity ladder step, metric,
dtype, index dtype); k is a run-time value of the select.
"""

import math

from compiler.ir.builder import KernelBuilder, block
from kernels.knn import schedules

MIN_K = 33
MAX_K = 256
CAPACITIES = (1024, 2048, 4096)  # candidate slots per query (the select's shared scratch), a ladder
# Slots per neighbour: rows that beat a bound from the first M / SAMPLE rows number about SAMPLE (k + 1), a little
# more where the seeding lists' union is looser than the sample's own k-th score.
CANDIDATES_PER_K = 16
SAMPLE = 8
# Small databases sample up to half their rows, SMALL_SAMPLE_PER_K (k + 1) of them: there the select's sort of
# M / R (k + 1) candidates per query, not the tensor-core work, is the cost (on the H200 at B 7, Q 9664, M 1824,
# k 91, about 520 candidates per query from 320 sampled rows took 9.1 ms against flashlib's 7.0).
SMALL_SAMPLE_PER_K = 16
SELECT_WARPS = 8
SEED_K = 32  # the seeding pass's lists (register lists)
SEED_ENTRIES_PER_K = 4  # seeding lists' entries per neighbour asked of the seed plan (their union bounds the k-th)


def capacity(k, m=None):
    """Candidate slots per query for k neighbours: the first ladder step holding CANDIDATES_PER_K * k (and, for a
    search with no seeding pass, all `m` rows)."""
    if not MIN_K <= k <= MAX_K:
        raise ValueError("k must be in [%d, %d] for the wide-k path, got %d" % (MIN_K, MAX_K, k))
    need = max(CANDIDATES_PER_K * k, m or 0)
    return next((c for c in CAPACITIES if c >= need), CAPACITIES[-1])


def sample_rows(m, k):
    """Rows of the database the seeding pass samples: M / SAMPLE, or for a small database up to M / 2 and
    SMALL_SAMPLE_PER_K (k + 1), and at least SEED_ENTRIES_PER_K (k + 1) so that its lists' union can bound the
    (k + 1)-th score; 0 when that is more than half the database (every row is then a candidate, as the buffers
    hold all M)."""
    rows = max(m // SAMPLE, min(m // 2, SMALL_SAMPLE_PER_K * (k + 1)), SEED_ENTRIES_PER_K * (k + 1))
    return rows if 2 * rows <= m else 0


def rounding_slack(metric, d):
    """(a, b): two f32 evaluations of one ranking score differ by at most a |q| |x| + b |x|^2 (a |q| for cosine).

    Two evaluations of a dot product in different summation orders differ by at most
    2 gamma_D sum |q_i x_i| <= 2 gamma_D |q| |x| (gamma_D = D u / (1 - D u), u = 2^-24).
    """
    u = 2.0 ** -24
    gamma = d * u / (1 - d * u)
    a = {"l2": 4 * gamma + 4 * u, "ip": 2 * gamma + 2 * u, "cos": 2 * gamma + 2 * u}[metric]
    return a, (2 * u if metric == "l2" else 0.0)


def select_kernel(capacity=2048, metric="l2", dtype="bf16", index_dtype="i32", warps=SELECT_WARPS, target="sm_90a",
                  name=None):
    """A block per (query, problem): the k best of the query's candidate buffer, rescored exactly, sorted (TopKSelect).

    `capacity` is the shared scratch's length (a power of two), which the buffer's C must not pass.
    """
    if metric not in schedules.METRICS:
        raise ValueError("metric must be one of %s, got %r" % (schedules.METRICS, metric))
    if dtype not in schedules.ROW_DTYPES:
        raise ValueError("select reads bf16, f16 or f32 rows, got %r" % dtype)
    if index_dtype not in ("i32", "i64"):
        raise ValueError("select writes i32 or i64 indices, got %r" % index_dtype)
    if capacity < MAX_K or capacity & (capacity - 1):
        raise ValueError("capacity must be a power of two of at least %d, got %d" % (MAX_K, capacity))
    kb = KernelBuilder(name or "knn_select", target=target)
    b = kb.symbol("B", min=1, max=1 << 16, doc="independent problems (batch)")
    q_n = kb.symbol("Q", min=1, max=1 << 26, doc="queries per problem")
    m = kb.symbol("M", min=1, max=schedules.MAX_M, doc="database rows per problem")
    dd = kb.symbol("D", min=1, max=1 << 12, doc="features (the rescore loops over them at run time)")
    c = kb.symbol("C", min=1, max=capacity, doc="candidate slots per query (at most the scratch's %d)" % capacity)
    kk = kb.symbol("k", min=1, max=MAX_K, doc="neighbours per query (a run-time value)")
    kb.require(kk <= c, "the buffer holds k candidates")
    what = {"l2": "||q[b, i] - x[b, j]||^2 (smallest)", "ip": "q[b, i].x[b, j] (largest)",
            "cos": "cos(q[b, i], x[b, j]) (largest)"}[metric]
    kb.contract(
        math="(dist[b, i, :], idx[b, i, :]) = the k best j of %s among the first min(count[b, i], C) entries of"
        " cand_i[b, i, :] ranked by cand_v, rescored exactly in f32 and sorted, ties to the smaller j" % what,
        reference="kernels.knn.reference.select_candidates", metric="recall", tolerance=0.99)
    q = kb.tensor("q", dtype, [b, q_n, dd], doc="queries")
    x = kb.tensor("x", dtype, [b, m, dd], doc="database rows")
    cand_v = kb.tensor("cand_v", "f32", [b, q_n, c], doc="candidates' ranking scores (in no order)")
    cand_i = kb.tensor("cand_i", "i32", [b, q_n, c], doc="candidates' database rows")
    count = kb.tensor("count", "i32", [b, q_n], doc="candidates appended per query (past C: overflowed)")
    dist = kb.tensor("dist", "f32", [b, q_n, kk], access="write", doc="exact scores of the neighbours, best first")
    idx = kb.tensor("idx", index_dtype, [b, q_n, kk], access="write", doc="database rows of the neighbours")
    kb.grid(q_n, b)
    s_v = kb.shared("sV", "f32", [capacity])
    s_i = kb.shared("sI", "i32", [capacity])
    metric_name = {"l2": "l2", "ip": "inner_product", "cos": "cosine"}[metric]
    with kb.role("main", "compute", warps=warps) as r:
        bi, qi = block.y, block.x
        r.top_k_select(cand_v[bi, qi, 0], cand_i[bi, qi, 0], count[bi, qi], kk, q[bi, qi, 0], x[bi, 0, 0], metric_name,
                       s_v.all, s_i.all, dist[bi, qi, 0], idx[bi, qi, 0], largest=schedules.largest(metric))
    return kb.build()


def filter_kernel(params, metric="l2", exclude_self=False, dtype="bf16"):
    """The filter pass: the rows score kernel's collect form with a plan's layout parameters (sorted pairs)."""
    kwargs = {key: v for key, v in dict(params).items() if key not in ("k", "seeded", "minima")}
    return schedules.rows_sm90a(metric=metric, exclude_self=exclude_self, dtype=dtype, collect=True, **kwargs)


def worst(metric):
    return -math.inf if schedules.largest(metric) else math.inf
