"""Genomes: a candidate as a seed family's params plus the IR rewrites applied on top.

A genome is data ({"family", "params", "rewrites"}) and `materialize` turns it into a
kernel: build the family at its params, then apply each rewrite (a transformation of
agent/transforms) in a fixed order: the structural path first (retarget, loads into a
TMA ring, the producer split off, wgmma, block shapes), the epilogue and release
protocol, occupancy, persistence, ring depths (after the rings persistence makes),
instruction choices, register budgets last, as they depend on the block's threads. Rewrites are keyed by name and target ("swizzle:sCols"), so a tactic that
revisits one replaces its earlier choice and equal genomes print equally. Candidates
an LLM wrote have no genome; tactics then rewrite their IR directly.
"""

import dataclasses
import json

from agent import seeds, transforms

# Rewrites that decide the same thing: adding one drops the others (the latest choice wins).
CONFLICTS = {"registers": ("rebalance_registers",), "rebalance_registers": ("registers",)}
ORDER = ("retarget", "loads_to_tma", "split_producer", "mma_to_wgmma", "tile_shape", "defer_lane_reduction",
         "split_reduction", "elect_release", "min_blocks", "persistent", "ring_depth", "swizzle", "instr_n", "unroll",
         "registers", "rebalance_registers")


@dataclasses.dataclass(frozen=True)
class Genome:
    family: str
    params: dict
    rewrites: dict  # "name" or "name:target" -> args

    def to_json(self):
        return json.dumps({"family": self.family, "params": self.params, "rewrites": self.rewrites}, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        return cls(data["family"], data["params"], data["rewrites"])

    def with_params(self, params):
        return Genome(self.family, dict(params), dict(self.rewrites))

    def with_rewrite(self, key, args):
        drop = CONFLICTS.get(rewrite_name(key), ())
        kept = {k: v for k, v in self.rewrites.items() if rewrite_name(k) not in drop}
        return Genome(self.family, dict(self.params), {**kept, key: dict(args)})

    def without_rewrite(self, key):
        return Genome(self.family, dict(self.params), {k: v for k, v in self.rewrites.items() if k != key})

    def describe(self):
        """One line: the params and rewrites, for reports and logs."""
        params = ", ".join("%s=%s" % kv for kv in sorted(self.params.items()))
        rw = ", ".join(k if not v else "%s(%s)" % (k, ", ".join("%s=%s" % kv for kv in sorted(v.items())))
                       for k, v in sorted(self.rewrites.items(), key=lambda kv: _rank(kv[0])))
        return "%s(%s)%s" % (self.family, params, " + " + rw if rw else "")


def rewrite_name(key):
    return key.split(":", 1)[0]


def _rank(key):
    name = rewrite_name(key)
    return (ORDER.index(name) if name in ORDER else len(ORDER), key)


def materialize(genome, fixed):
    """The kernel a genome describes; NotApplicable when one of its rewrites no longer applies."""
    kernel = seeds.family(genome.family).build(genome.params, fixed)
    for key in sorted(genome.rewrites, key=_rank):
        kernel = transforms.apply(kernel, rewrite_name(key), genome.rewrites[key])
    return kernel
