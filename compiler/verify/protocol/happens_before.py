"""Happens-before tracking of on-chip memory for the protocol model (vector clocks).

Every thread class and each of its asynchronous units (TMA loads, MMAs, TMA
stores) is an *agent* with a vector clock. A location is one stage (slot) of a
shared or tensor-memory region; accesses carry the box (per-dimension
[start, end)) of the window they touch, so disjoint windows of one stage (a
double-buffered accumulator, per-warpgroup rows) do not conflict. Threads of
one cooperative op instance write and read disjoint parts, so accesses of the
same op instance never conflict. Otherwise an access must be ordered after
every overlapping access of another instance:

- a write after earlier writes and reads (else: a race; on a pipeline's ring it
  is a refill before release),
- a read after the writes it reads (else: a read of data the writer has not
  finished, or, when the reader was ordered after the data the write
  replaced, a write that overtook the read),
- an async-proxy read (TMA store source, wgmma/tcgen05 operand) of
  generic-proxy writes additionally after a proxy fence of each writer,
- an async-proxy write (a TMA load) over generic-proxy reads additionally
  after a proxy fence of each reader: without it the TMA may land before the
  readers' loads complete, though the release that hands the stage back is
  ordered after them (seen on the H200: a consumer reading a ring stage's
  norms with ld.shared, then releasing it, read the next round's norms).

A class of several threads is one agent, but its threads exchange data: what
one thread wrote cooperatively, another reads. So an access after another op
instance's access by the same multi-thread class must also follow a barrier
(named barrier or block_sync) that the class completed in between: its *peer
sync*.

Where each warpgroup, warp or thread of an op writes its own part (a stored
fragment, a TMA load per issuing thread), the write carries its writer: two
writers of one op instance sharing an element are a write-write overlap. An
async-proxy read must find every element of its box written (TMA stores and
tensor cores read whole tiles).
"""

from compiler.verify.protocol import slots

# The agents of a thread class: its threads, and the asynchronous units its role uses.
THREAD_AGENT, TMA_AGENT, MMA_AGENT, STORE_AGENT = range(4)


def join(a, b):
    """The elementwise maximum of two vector clocks."""
    return [x if x >= y else y for x, y in zip(a, b)]


class Violation(Exception):
    """The model found a defect: what kind, where, and related places ((message, path), ...)."""

    def __init__(self, kind, path, message, notes=(), hint=""):
        super().__init__(message)
        self.kind = kind
        self.path = path
        self.message = message
        self.notes = tuple(notes)
        self.hint = hint  # a fix hint for this finding, sharper than its rule's


class Access:
    __slots__ = ("agent", "time", "path", "inst", "box", "generic", "cls", "replaced", "unit")

    def __init__(self, agent, time, path, inst, box, generic=False, cls=-1, unit=None):
        self.agent = agent
        self.time = time
        self.path = path
        self.inst = inst  # (path, loop iteration values): the op instance
        self.box = box  # ((start, end), ...) per dimension
        self.generic = generic  # written (or read) through the generic proxy
        self.cls = cls  # thread class that issued it
        self.replaced = ()  # the writes this one covered
        self.unit = unit  # (role, level, index) of the warpgroup, warp or thread that wrote its own part, or None


Access.copy = slots.copier(Access)


class Loc:
    __slots__ = ("writes", "reads", "pending")

    def __init__(self):
        self.writes = []
        self.reads = []
        self.pending = []  # (class, path, box): cp.async writes in flight

    def copy(self):
        new = Loc.__new__(Loc)
        new.writes = list(self.writes)  # a write's record never changes once made; a read's is updated in place
        new.reads = [r.copy() for r in self.reads]
        new.pending = list(self.pending)
        return new


def overlaps(a, b):
    for (alo, ahi), (blo, bhi) in zip(a, b):  # a loop, not all(...): the model's hottest test
        if alo >= bhi or blo >= ahi:
            return False
    return True


def covers(a, b):
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if alo > blo or bhi > ahi:
            return False
    return True


def intersection(a, b):
    return tuple((max(alo, blo), min(ahi, bhi)) for (alo, ahi), (blo, bhi) in zip(a, b))


def uncovered(box, boxes):
    """A part of `box` that none of `boxes` covers, or None when they cover it."""
    for b in boxes:
        if covers(b, box):  # the common case: one write covers the read
            return None
    left = [box]
    for b in boxes:
        rest = []
        for piece in left:
            if not overlaps(piece, b):
                rest.append(piece)
                continue
            piece = list(piece)
            for d, ((lo, hi), (blo, bhi)) in enumerate(zip(piece, b)):  # peel off the parts outside b, dim by dim
                if lo < blo:
                    rest.append(tuple(piece[:d]) + ((lo, blo),) + tuple(piece[d + 1:]))
                if bhi < hi:
                    rest.append(tuple(piece[:d]) + ((bhi, hi),) + tuple(piece[d + 1:]))
                piece[d] = (max(lo, blo), min(hi, bhi))
        left = rest
        if not left:
            return None
    return left[0]


def describe(box):
    """`[0, 64) x [0, 128)`: a box for messages (elements along each dim)."""
    return " x ".join("[%d, %d)" % d for d in box) if len(box) > 1 else "elements [%d, %d)" % box[0]


def _who(unit):
    _, level, index = unit
    return "%s %d" % (level, index)


def _first_after(times, t):
    for f in times:
        if f > t:
            return f
    return None


class Memory:
    """Locations keyed by (region index, slot)."""

    def __init__(self, proxy_fences, names, weights, peer_syncs, agent_class):
        self.locs = {}
        self.proxy_fences = proxy_fences  # class -> [class clock at each fence.proxy.async]
        self.names = names  # region index -> name
        self.weights = weights  # class -> threads
        self.peer_syncs = peer_syncs  # class -> class clock when it last completed a barrier
        self.agent_class = agent_class  # agent -> the class whose threads it is, -1 for async units

    def copy(self, proxy_fences, peer_syncs):
        """A copy for a forked model state (simulate.Model.copy), reading its copies of the fences and syncs."""
        new = Memory.__new__(Memory)
        new.__dict__.update(self.__dict__)
        new.proxy_fences, new.peer_syncs = proxy_fences, peer_syncs
        new.locs = {key: loc.copy() for key, loc in self.locs.items()}
        return new

    def _unsynced_peer(self, earlier, agent, inst):
        """Whether `earlier` was done by other threads of the accessing class with no barrier since."""
        if earlier.agent != agent or earlier.inst == inst:
            return False
        c = self.agent_class[agent] if agent >= 0 else -1
        return c >= 0 and self.weights[c] > 1 and self.peer_syncs[c] < earlier.time

    def _unfenced(self, access, vc):
        """Whether no fence.proxy.async by `access`'s threads after it is ordered before the clock `vc`."""
        fence = _first_after(self.proxy_fences[access.cls], access.time)
        return fence is None or vc[access.agent] < fence

    def loc(self, key):
        loc = self.locs.get(key)
        if loc is None:
            loc = self.locs[key] = Loc()
        return loc

    def _race(self, ring, path, name, other, what):
        if ring:
            raise Violation(
                "ring_race", path,
                "refills a stage of `%s` while %s is not ordered before it: its consumers have not released the slot"
                % (name, what),
                (("the conflicting access", other),),
            )
        raise Violation("write_race", path, "writes `%s` while %s is not ordered before this write" % (name, what),
                        (("the conflicting access", other),))

    def check_write(self, key, box, vc, path, inst, cls, ring, agent=-1, unit=None, async_proxy=False):
        """Raise unless a write of `box` by `agent` (clock vc) may start now; `async_proxy`: a TMA load's."""
        loc = self.locs.get(key)
        if loc is None:
            return
        name = self.names[key[0]]
        for w in loc.writes:
            if unit is not None and w.inst == inst and w.unit is not None and w.unit != unit and overlaps(w.box, box):
                raise Violation(
                    "write_overlap", path,
                    "writes %s of `%s` from %s and from %s: the writers of one op share these elements"
                    % (describe(intersection(w.box, box)), name, _who(w.unit), _who(unit)),
                    (("`%s` is declared here" % name, "kernel.regions[%d]" % key[0]),),
                )
        for w in loc.writes:
            if overlaps(w.box, box) and (w.inst != inst and vc[w.agent] < w.time or self._unsynced_peer(w, agent, inst)):
                self._race(ring, path, name, w.path, "an earlier write")
        for r in loc.reads:
            if overlaps(r.box, box) and (r.inst != inst and vc[r.agent] < r.time or self._unsynced_peer(r, agent, inst)):
                self._race(ring, path, name, r.path, "a read of its previous contents (by other threads of this role)"
                           if r.agent == agent else "a read of its previous contents")
        for c, p, b in loc.pending:
            if c != cls and overlaps(b, box):
                self._race(ring, path, name, p, "an in-flight cp.async")
        if async_proxy:
            for r in loc.reads:
                if r.generic and r.inst != inst and overlaps(r.box, box) and self._unfenced(r, vc):
                    raise Violation(
                        "proxy_fence_war", r.path,
                        "reads `%s` through the generic proxy, then an async-proxy write (TMA load) refills it without "
                        "a fence.proxy.async by the reading threads: the load may land before these reads complete"
                        % name,
                        (("the TMA load that overwrites it", path),),
                        "Run fence(proxy_async) in the reading role after its last generic read of `%s` and before "
                        "the arrive that releases the stage." % name,
                    )

    def write(self, key, box, agent, vc, path, inst, cls, ring, generic=False, unit=None, async_proxy=False):
        self.check_write(key, box, vc, path, inst, cls, ring, agent, unit, async_proxy)
        loc = self.loc(key)
        access = Access(agent, vc[agent], path, inst, box, generic, cls, unit)
        kept, replaced = [], []
        for w in loc.writes:
            (replaced if w.inst != inst and covers(box, w.box) else kept).append(w)
        access.replaced = replaced
        kept.append(access)
        loc.writes = kept
        loc.reads = [r for r in loc.reads if not covers(box, r.box)]

    def read(self, key, box, agent, vc, path, inst, cls, ring, async_proxy, written_elsewhere, generic=False):
        """Record a read of `box`; raise when it is not ordered after what it reads. `generic`: an ld.shared."""
        loc = self.locs.get(key)
        if loc is None:
            loc = self.locs[key] = Loc()
        name = self.names[key[0]]
        for c, p, b in loc.pending:
            if not overlaps(b, box):
                continue
            if c == cls:
                raise Violation("async_read", path, "reads `%s` while this thread's cp.async into it is in flight" % name,
                                (("the cp.async", p),))
            raise Violation("raw", path, "reads `%s` while another thread's cp.async into it is in flight" % name,
                            (("the cp.async", p),))
        seen = [w for w in loc.writes if overlaps(w.box, box)]
        if not seen:
            if written_elsewhere:
                raise Violation("raw", path,
                                "reads `%s` before the write that fills it: nothing orders this read after that write" % name)
            raise Violation("uninit_read", path, "reads `%s` before anything has written it" % name)
        for w in seen:
            if w.agent == agent and self._unsynced_peer(w, agent, inst):
                raise Violation(
                    "raw", path,
                    "reads `%s`, which other threads of this role wrote, with no barrier between (named barrier or "
                    "block_sync): their writes are not visible yet" % name,
                    (("the write", w.path),),
                )
            if w.inst == inst or vc[w.agent] >= w.time:
                continue
            if w.replaced and all(vc[p.agent] >= p.time for p in w.replaced):
                self._race(ring, w.path, name, path, "a read of its previous contents")
            raise Violation("raw", path, "reads `%s` without being ordered after the write that fills it" % name,
                            (("the write", w.path),))
        if async_proxy:
            # (uncovered's own first test, inline: one write covering the read is the common case)
            hole = None if covers(seen[0].box, box) else uncovered(box, [w.box for w in seen])
            if hole is not None:
                raise Violation(
                    "uncovered_read", path,
                    "reads %s of `%s`, which nothing wrote: the tensor core or TMA store would take whatever they hold"
                    % (describe(hole), name),
                    tuple(("a write of `%s`" % name, p) for p in sorted({w.path for w in seen})[:2])
                    + (("`%s` is declared here" % name, "kernel.regions[%d]" % key[0]),),
                )
            for w in seen:
                if w.generic and w.inst != inst and self._unfenced(w, vc):
                    raise Violation(
                        "proxy_fence", w.path,
                        "writes `%s` through the generic proxy, but an async-proxy read (TMA or tensor core) follows "
                        "without a fence.proxy.async by the writing threads" % name,
                        (("the async-proxy read", path),),
                    )
        for r in loc.reads:
            if r.agent == agent and r.box == box and r.generic == generic:
                r.time, r.path, r.inst = vc[agent], path, inst
                return
        loc.reads.append(Access(agent, vc[agent], path, inst, box, generic, cls))
