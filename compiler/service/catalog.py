"""ListTargets and ListRules: the compiler's static tables as responses (and ListRules' with rules given as data).

Targets come from compiler/targets (names, compute capabilities, feature gates)
joined with its database (compiler/targets/database.py: every device's hardware
figures and their sources); rules from the verifier's registry.
"""

import collections.abc
import dataclasses
import functools
import numbers

from cake.compiler.v1 import compiler_service_pb2 as service_pb2
from cake.ir.v1 import ir_pb2

from compiler.ir.enums import value_of
from compiler.targets import database
from compiler.targets import FEATURES, TARGETS
from compiler.verify import RULES


def _figures(device):
    """Every numeric figure of a Device by name: tables as "table.entry", (low, high) ranges
    as "name.low" and "name.high"."""
    out = {}
    for f in dataclasses.fields(device):
        value = getattr(device, f.name)
        if isinstance(value, numbers.Real):
            out[f.name] = float(value)
        elif isinstance(value, collections.abc.Mapping):
            out.update({"%s.%s" % (f.name, k): float(v) for k, v in value.items() if isinstance(v, numbers.Real)})
        elif isinstance(value, tuple) and len(value) == 2:
            out[f.name + ".low"], out[f.name + ".high"] = map(float, value)
    return out


def _devices(target_name):
    db = database.load()
    for name, device in sorted(db.devices.get(target_name, {}).items()):
        yield service_pb2.DeviceInfo(
            name=name,
            key=device.key,
            is_default=db.defaults[target_name] == name,
            figures=_figures(device),
            sources=dict(device.sources or {}),
        )


@functools.lru_cache(maxsize=None)
def list_targets():
    out = service_pb2.ListTargetsResponse()
    for t in TARGETS.values():
        out.targets.add(
            name=t.name,
            ir_target=value_of(ir_pb2.Target.DESCRIPTOR, t.name),
            arch=t.arch,
            compute_capability_major=t.compute_capability[0],
            compute_capability_minor=t.compute_capability[1],
            features=[service_pb2.Feature(name=f, doc=FEATURES[f]) for f in FEATURES if t.has(f)],
            devices=list(_devices(t.name)),
        )
    return out


def device_names():
    """Every name `device` may take: device names and "target/name" keys."""
    db = database.load()
    return sorted({n for devs in db.devices.values() for n in devs} | {d.key for devs in db.devices.values() for d in devs.values()})


@functools.lru_cache(maxsize=None)
def list_rules():
    return rules_response()


def rules_response(extra_rules=()):
    """A ListRulesResponse of the built-in rules, then `extra_rules` (verifier Rule objects)."""
    return service_pb2.ListRulesResponse(
        rules=[
            service_pb2.RuleInfo(id=r.id, category=r.category, severity=r.severity, doc=r.doc, fix_hint=r.fix_hint)
            for r in list(RULES) + list(extra_rules)
        ]
    )
