"""A kernel family's declared shape domain, read from data: symbols, limits, buckets, named cells.

A domain file (JSON) says which shapes an op promises to handle and how the dispatcher
groups them:

    {"op": "kmeans_assign",
     "symbols": {"N": {"min": 1024, "max": 67108864}, ...},     # inclusive ranges
     "dtypes": ["bf16", "f16"],
     "limits": [{"product": ["B", "N"], "max": 268435456, "why": "..."}],
     "buckets": {"K": [4, 16, ...], ...},   # upper edges: bucket i holds values <= edges[i]
     "cells": [{"name": "...", "shape": {...}, "source": "..."}]}

`bucket(shape)` is what the tuning database is keyed by (plus device and toolchain);
`corners()` gives each bucket's extreme and awkward points (2^j +- 1, values that are
multiples of no tile) for the static coverage proof; `sample()` draws shapes
log-uniformly for validation, optionally under a work cap.
"""

import bisect
import dataclasses
import json
import math


@dataclasses.dataclass(frozen=True)
class Domain:
    op: str
    symbols: dict  # name -> (min, max)
    dtypes: tuple
    limits: tuple  # (names, max, why): the product of the named symbols is at most max
    buckets: dict  # name -> upper edges, ascending; the last edge is at least the symbol's max
    cells: tuple  # {"name", "shape", "source"}

    @classmethod
    def load(cls, path):
        with open(path) as f:
            data = json.load(f)
        symbols = {n: (int(s["min"]), int(s["max"])) for n, s in data["symbols"].items()}
        buckets = {n: tuple(int(e) for e in edges) for n, edges in data.get("buckets", {}).items()}
        limits = tuple((tuple(l["product"]), int(l["max"]), l.get("why", "")) for l in data.get("limits", []))
        dom = cls(data["op"], symbols, tuple(data["dtypes"]), limits, buckets, tuple(data.get("cells", [])))
        for name, edges in buckets.items():
            high = dom.value_range(name)[1]
            if list(edges) != sorted(set(edges)) or edges[-1] < high:
                raise ValueError("%s: bucket edges of %s must ascend and reach its max %d" % (path, name, high))
        for cell in dom.cells:
            why = dom.outside(cell["shape"])
            if why:
                raise ValueError("%s: cell %r is outside the domain: %s" % (path, cell["name"], why))
        return dom

    def outside(self, shape):
        """Why `shape` is outside the domain, or None when it is inside."""
        for name, (low, high) in self.symbols.items():
            v = shape.get(name)
            if v is None or not low <= v <= high:
                return "%s = %s is outside [%d, %d]" % (name, v, low, high)
        if "dtype" in shape and shape["dtype"] not in self.dtypes:
            return "dtype %s is not one of %s" % (shape["dtype"], ", ".join(self.dtypes))
        for names, high, why in self.limits:
            if math.prod(shape[n] for n in names) > high:
                return "%s = %d is above %d (%s)" % ("*".join(names), math.prod(shape[n] for n in names), high, why)
        return None

    def value_range(self, name):
        """The [min, max] of a symbol, or of a product of symbols ("B*N", capped by a limit on it)."""
        names = name.split("*")
        low = math.prod(self.symbols[n][0] for n in names)
        high = math.prod(self.symbols[n][1] for n in names)
        for product, cap, _ in self.limits:
            if sorted(product) == sorted(names):
                high = min(high, cap)
        return low, high

    def bucket_index(self, name, value):
        """The index of the bucket of `name` (a symbol, or a product like "B*N") holding `value`."""
        return bisect.bisect_left(self.buckets[name], value)

    def bucket_range(self, name, index):
        """The inclusive [low, high] of bucket `index` of `name`."""
        edges = self.buckets[name]
        floor, ceiling = self.value_range(name)
        low = edges[index - 1] + 1 if index else floor
        return max(low, floor), min(edges[index], ceiling)

    def corners(self, name, index):
        """Awkward points of one bucket: its ends, 2^j +- 1 inside it, and values that are multiples of no tile."""
        low, high = self.bucket_range(name, index)
        points = {low, high}
        j = 1
        while (1 << j) - 1 <= high:
            for p in ((1 << j) - 1, 1 << j, (1 << j) + 1):
                if low <= p <= high:
                    points.add(p)
            j += 1
        for odd in (low + 1, (low + high) // 2 | 1, high - 1):  # odd values: multiples of no power-of-two tile
            if low <= odd <= high:
                points.add(odd)
        return sorted(points)

    def sample(self, rng, count, accept=None, log_uniform=("B", "N", "K", "D", "Q", "M"), max_tries=1000000):
        """`count` shapes drawn log-uniformly per symbol (uniformly for others), inside the domain.

        `accept(shape)` may reject more (a work cap, say); dtypes are drawn uniformly.
        """
        out = []
        tries = 0
        while len(out) < count:
            tries += 1
            if tries > max_tries:
                raise ValueError("sampling %s: only %d of %d shapes accepted in %d tries" % (self.op, len(out), count, max_tries))
            shape = {}
            for name, (low, high) in self.symbols.items():
                if name in log_uniform and low > 0:
                    v = int(round(math.exp(rng.uniform(math.log(low), math.log(high + 1)))))
                else:
                    v = rng.randint(low, high)
                shape[name] = min(max(v, low), high)
            shape["dtype"] = rng.choice(self.dtypes)
            if self.outside(shape) is None and (accept is None or accept(shape)):
                out.append(shape)
        return out
