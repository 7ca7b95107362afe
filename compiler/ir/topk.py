"""TopK semantics the verifier, lowering and the cost analysis share (TopK and Rescore in ir.proto).

Which lists a score tile keeps (by its fragment layout and the axis candidates run
along), the shape those lists have, which lanes share one list (their thresholds and
merges combine across exactly those lanes), and which scopes merge them.
"""

from cake.ir.v1 import ir_pb2

L = ir_pb2.FragmentLayout
S = ir_pb2.Scope

# Entries a register list may hold: every entry is two registers per list and thread, and the
# insertion is unrolled over them.
MAX_K = 64

# Candidates per thread that one warp vote decides on (TopK.vote).
VOTE_GROUP = 16

# (src layout, axis) -> the layout of the lists it keeps.
LIST_LAYOUT = {
    (L.FRAGMENT_LAYOUT_WGMMA_ACC, 1): L.FRAGMENT_LAYOUT_WGMMA_ROWS,
    (L.FRAGMENT_LAYOUT_WGMMA_ACC, 0): L.FRAGMENT_LAYOUT_WGMMA_COLS,
    (L.FRAGMENT_LAYOUT_MMA_ACC, 1): L.FRAGMENT_LAYOUT_MMA_ROWS,
    (L.FRAGMENT_LAYOUT_ROW_PER_THREAD, 1): L.FRAGMENT_LAYOUT_ROW_PER_THREAD,
    (L.FRAGMENT_LAYOUT_PER_THREAD, 0): L.FRAGMENT_LAYOUT_PER_THREAD,
}

# List layout -> (first, last) xor distances of the lanes holding parts of one list's row or
# column: lanes lane ^ m for m = first, 2 first, ... < last. None: a thread's list is its own.
SHARING_LANES = {
    L.FRAGMENT_LAYOUT_WGMMA_ROWS: (1, 4),
    L.FRAGMENT_LAYOUT_MMA_ROWS: (1, 4),
    L.FRAGMENT_LAYOUT_WGMMA_COLS: (4, 32),
    L.FRAGMENT_LAYOUT_ROW_PER_THREAD: None,
    L.FRAGMENT_LAYOUT_PER_THREAD: None,
}

# List layout -> the scopes a merge-only TopK may have: SCOPE_THREAD re-sorts; SCOPE_LANES
# merges the sharing lanes; SCOPE_WARP merges per-thread lists across the warp.
MERGE_SCOPES = {
    L.FRAGMENT_LAYOUT_WGMMA_ROWS: (S.SCOPE_THREAD, S.SCOPE_LANES),
    L.FRAGMENT_LAYOUT_MMA_ROWS: (S.SCOPE_THREAD, S.SCOPE_LANES),
    L.FRAGMENT_LAYOUT_WGMMA_COLS: (S.SCOPE_THREAD, S.SCOPE_LANES),
    L.FRAGMENT_LAYOUT_ROW_PER_THREAD: (S.SCOPE_THREAD,),
    L.FRAGMENT_LAYOUT_PER_THREAD: (S.SCOPE_THREAD, S.SCOPE_WARP),
}

# Merge scope -> (first, last) xor distances it merges over, for layouts without sharing lanes.
WARP_LANES = (1, 32)

# List layout -> the lanes a voted insertion's threshold spans: the lanes sharing a list, and for per_thread
# lists the warp, since they are merged across it before anything reads them (CAKE-STRUCT-024 checks it).
VOTE_LANES = {**SHARING_LANES, L.FRAGMENT_LAYOUT_PER_THREAD: WARP_LANES}


def is_merge(op):
    """Whether a TopK is the merge-only form (src is the values region, as ArgReduce's merge)."""
    return op.src.region == op.values.region


def list_shape(src_shape, src_layout, axis, k):
    """The [lists, k] (or [k]) shape of the lists a src tile keeps, or None for an unsupported pairing."""
    layout = LIST_LAYOUT.get((src_layout, axis))
    if layout is None or len(src_shape) < 1:
        return None
    if layout == L.FRAGMENT_LAYOUT_PER_THREAD:
        return [k]
    if len(src_shape) != 2:
        return None
    kept = src_shape[1 - axis]
    return [kept, k]


def merge_lanes(list_layout, scope):
    """(first, last) xor distances a merge-only TopK of this layout and scope combines, or None (a sort)."""
    if scope == S.SCOPE_LANES:
        return SHARING_LANES.get(list_layout)
    if scope == S.SCOPE_WARP:
        return WARP_LANES
    return None


def rescore_largest(metric):
    """Whether a Rescore metric ranks larger scores first."""
    return metric != ir_pb2.RESCORE_METRIC_L2
