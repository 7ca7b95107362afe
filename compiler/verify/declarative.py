"""Rules as data: declarative predicates over IR features (features.py), loaded from JSON.

The self-evolving agent turns recurring failures into such rules. A rule file
holds a list of rules (or {"rules": [...]}); each rule is

    {"id": "CAKE-LEARNED-001",
     "category": "memory movement",           # optional, default "structure"
     "severity": "warning",                   # optional: error | warning | note, default "warning"
     "doc": "Unswizzled wide tiles bank-conflict.",
     "when": {"feature": "region.swizzle", "op": "==", "value": "none"},
     "and": [{"feature": "region.inner_bytes", "op": ">=", "value": 128}],
     "message": "region {region.name} is {region.inner_bytes} bytes wide but not swizzled",
     "fix_hint": "swizzle it 128b"}

A condition is {"feature", "op", "value"} with op one of == != < <= > >=
in not_in contains, or {"all": [...]}, {"any": [...]}, {"not": condition}.
"when" and every "and" entry must hold. A rule applies at one level (kernel,
role, region, barrier or op), the level of the features it names; kernel
features are visible at every level and role features at op level.
Messages may cite features as {feature}. Nothing is evaluated as code:
loading validates every name and operator, checking compares values.
"""

import json
import operator
import re

from compiler.verify import features, registry
from compiler.verify.registry import Finding, Rule

_ID = re.compile(r"CAKE-[A-Z]+-[0-9]{3}\Z")
_PLACEHOLDER = re.compile(r"\{([a-z_]+\.[a-z_]+)\}")
_KEYS = {"id", "category", "severity", "doc", "when", "and", "message", "fix_hint"}


class RuleError(ValueError):
    """A rule file or rule is malformed; the message names the rule and the problem."""


def _in(a, b):
    return a in b


def _not_in(a, b):
    return a not in b


def _contains(a, b):
    return b in a


_OPS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": _in,
    "not_in": _not_in,
    "contains": _contains,
}


def _level(name):
    return name.split(".", 1)[0]


def _compile(cond, where, used):
    """A predicate features -> bool for one condition; records the feature names it uses in `used`."""
    if not isinstance(cond, dict):
        raise RuleError("%s: a condition is an object, not %r" % (where, cond))
    if set(cond) == {"all"} or set(cond) == {"any"}:
        key = next(iter(cond))
        parts = cond[key]
        if not isinstance(parts, list) or not parts:
            raise RuleError("%s: %r takes a non-empty list of conditions" % (where, key))
        preds = [_compile(p, where, used) for p in parts]
        combine = all if key == "all" else any
        return lambda f: combine(p(f) for p in preds)
    if set(cond) == {"not"}:
        inner = _compile(cond["not"], where, used)
        return lambda f: not inner(f)
    if set(cond) != {"feature", "op", "value"}:
        raise RuleError("%s: a condition has exactly feature, op and value (or all/any/not), not %s" % (where, sorted(cond)))
    name, op, value = cond["feature"], cond["op"], cond["value"]
    if name not in features.FEATURES:
        raise RuleError("%s: unknown feature %r (known: %s)" % (where, name, ", ".join(sorted(features.FEATURES))))
    if op not in _OPS:
        raise RuleError("%s: unknown op %r (known: %s)" % (where, op, " ".join(_OPS)))
    if op in ("in", "not_in") and not isinstance(value, list):
        raise RuleError("%s: %r needs a list value" % (where, op))
    used.add(name)
    fn = _OPS[op]

    def test(f):
        try:
            return bool(fn(f[name], value))
        except TypeError:  # values of different types compare false, never raise
            return False

    return test


def _rule_level(used, where):
    levels = {_level(n) for n in used} - {"kernel"}
    if levels == {"op", "role"}:
        return "op"
    if len(levels) > 1:
        raise RuleError("%s: features of several levels (%s) in one rule" % (where, ", ".join(sorted(levels))))
    return levels.pop() if levels else "kernel"


def _render(template, feats):
    return _PLACEHOLDER.sub(lambda m: str(feats.get(m.group(1), m.group(0))), template)


def _visible(name, level):
    return _level(name) in ("kernel", level) or (level == "op" and _level(name) == "role")


def rule_from_dict(data, taken=()):
    """A registry.Rule from one rule object; RuleError when it is malformed or its id is taken."""
    if not isinstance(data, dict):
        raise RuleError("a rule is an object, not %r" % (data,))
    rid = data.get("id")
    where = "rule %s" % rid
    if not isinstance(rid, str) or not _ID.match(rid):
        raise RuleError("%s: id must look like CAKE-LEARNED-001" % where)
    if rid in taken:
        raise RuleError("%s: id already taken" % where)
    unknown = set(data) - _KEYS
    if unknown:
        raise RuleError("%s: unknown keys %s" % (where, sorted(unknown)))
    for key in ("doc", "message", "fix_hint"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise RuleError("%s: %r must be a non-empty string" % (where, key))
    category = data.get("category", "structure")
    severity = data.get("severity", "warning")
    if category not in registry.CATEGORIES:
        raise RuleError("%s: category must be one of %s" % (where, ", ".join(registry.CATEGORIES)))
    if severity not in registry.SEVERITIES:
        raise RuleError("%s: severity must be one of %s" % (where, ", ".join(registry.SEVERITIES)))
    if "when" not in data:
        raise RuleError("%s: needs a 'when' condition" % where)
    extra = data.get("and", [])
    if not isinstance(extra, list):
        raise RuleError("%s: 'and' is a list of conditions" % where)
    used = set()
    preds = [_compile(c, where, used) for c in [data["when"]] + extra]
    level = _rule_level(used, where)
    for text in (data["message"], data["fix_hint"]):
        for name in _PLACEHOLDER.findall(text):
            if name not in features.FEATURES or not _visible(name, level):
                raise RuleError("%s: message cites %r, which a %s rule does not see" % (where, name, level))
    message, fix_hint = data["message"], data["fix_hint"]

    def check(ctx):
        if not hasattr(ctx, "_features"):
            ctx._features = features.extract(ctx)
        for lvl, path, feats in ctx._features:
            if lvl == level and all(p(feats) for p in preds):
                yield Finding(path, _render(message, feats), fix_hint=_render(fix_hint, feats))

    check.__name__ = "declarative_" + rid
    return Rule(rid, registry.CATEGORIES[category], registry.SEVERITIES[severity], data["doc"], fix_hint, check)


def rules_from_data(data):
    """Rules from parsed JSON: a list of rule objects, or {"rules": [...]}."""
    if isinstance(data, dict) and set(data) == {"rules"}:
        data = data["rules"]
    if not isinstance(data, list):
        raise RuleError("a rule file holds a list of rules (or {\"rules\": [...]})")
    out, taken = [], {r.id for r in registry.RULES}
    for item in data:
        r = rule_from_dict(item, taken)
        taken.add(r.id)
        out.append(r)
    return out


def load_rules(path):
    """The rules in a JSON rule file; RuleError (a ValueError) naming what is wrong."""
    with open(path) as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as e:
            raise RuleError("%s: not JSON: %s" % (path, e)) from None
    return rules_from_data(data)
