"""The store's candidate hashes, replicated to the workers so a proposal skips known children where it is made.

A search proposal walks the tactic order until a child is new. Without the store, a worker
returns the first child it makes, and when that one is known the driver sends the walk
back to resume after it: late in a run, when most moves lead to kernels already seen, that
was about 50 round trips per candidate, one at a time through the commit order. So each
worker keeps a copy of the store's hashes in insertion order, sent in deltas: a propose
job names the prefix of that log that was in the store when it was submitted (`known_n`),
and the worker skips a child whose hash lies in that prefix. Any such child is still in
the store at the job's commit, where the driver would have resumed past it with the same
random draws, so the result is the one the round trips gave, whichever worker runs the
job and whatever it was sent before. A worker that lost its copy (a replaced process or
actor) finds a gap and ignores the delta; its reply's `known_len` makes the executor send
the whole log again.
"""


class KnownLog:
    """The driver's side: the hashes in store order, and what each worker slot was last sent of them."""

    def __init__(self):
        self.hashes = []
        self._sent = {}

    def extend(self, hashes):
        self.hashes.extend(hashes)

    def attach(self, slot, job):
        """`job` with the delta of the log that worker `slot` has not been sent (propose jobs only)."""
        if "known_n" not in job:
            return job
        base = self._sent.get(slot, 0)
        n = job["known_n"]
        self._sent[slot] = max(base, n)
        return dict(job, known_base=base, known_delta=self.hashes[base:n] if n > base else [])

    def replied(self, slot, result):
        """A worker's answer: when it holds less than it was sent (it started afresh), resend from there."""
        held = result.get("known_len") if isinstance(result, dict) else None
        if held is not None and held < self._sent.get(slot, 0):
            self._sent[slot] = held

    def lost(self, slot):
        """A worker slot whose process or actor was replaced: it holds nothing."""
        self._sent[slot] = 0


class KnownCopy:
    """A worker's side: the log as far as it was sent, and which hashes a job may treat as known."""

    def __init__(self):
        self._hashes = []
        self._index = {}

    def update(self, job):
        if job.get("known_base") == len(self._hashes):  # else a gap: this copy started afresh; wait for it all
            for h in job["known_delta"]:
                self._index.setdefault(h, len(self._hashes))
                self._hashes.append(h)

    def known(self, ir_hash, prefix):
        """Whether `ir_hash` was among the first `prefix` hashes of the store."""
        return self._index.get(ir_hash, prefix) < prefix

    def __len__(self):
        return len(self._hashes)
