"""Verifier-rule proposals: a declarative predicate that tells a recurring failure's kernels apart.

Given the kernels of one failure cluster (they compiled or verified, then failed
later: in the analysis, the build or on the GPU) and kernels known to be good
(passing candidates and the compiler's good corpus), `synthesize` looks for a
conjunction of at most MAX_ATOMS conditions over the verifier's IR features
(compiler/verify/features.py; each kernel's as the compiler port's `features` gives
them), at one entity level, that some entity of every failing kernel satisfies and
no entity of any good kernel does. Conditions are
equalities on names, kinds and flags and thresholds on sizes, taken from the values
the failing kernels have (sizes are bounded, not matched exactly, so a rule
describes a region of the space rather than one program); the search is greedy (each step keeps every failing kernel
covered and excludes the most good ones). The result is a rule object in
compiler/verify/declarative.py's format, or None when no such rule exists.
"""

import re

MAX_ATOMS = 3
SMALL_INT = 16  # ints up to this (counts, stages, warps) may be compared for equality; larger ones only bounded
LEVELS = ("kernel", "role", "region", "barrier", "op")
# Features too specific to generalize from (names differ between programs of one shape).
_SKIP = {"kernel.name"}
_CATEGORY = {"RES": "resources", "SYNC": "synchronization", "MEM": "memory movement", "PIPE": "pipeline",
             "DATA": "data consistency", "STRUCT": "structure", "TARGET": "target", "CONTRACT": "contract"}
_RUNTIME_CATEGORY = {"timeout": "synchronization", "illegal_address": "memory movement",
                     "cuda_error": "memory movement"}


def entities(features):
    """level -> [feature dict] of one kernel, from its IR features [(level, IR path, {feature: value})]."""
    out = {level: [] for level in LEVELS}
    for level, _, feats in features:
        out[level].append(feats)
    return out


def _visible(name, level):
    head = name.split(".", 1)[0]
    return head in ("kernel", level) or (level == "op" and head == "role")


def _atoms(level, failing):
    """Candidate conditions at `level` from the failing kernels' values."""
    out = set()
    for ents in failing:
        for feats in ents[level]:
            for name, value in feats.items():
                if name in _SKIP or not _visible(name, level) or isinstance(value, list):
                    continue
                if isinstance(value, bool) or isinstance(value, str):
                    out.add((name, "==", value))
                elif isinstance(value, int):
                    out.update({(name, ">=", value), (name, "<=", value)})
                    if abs(value) <= SMALL_INT:
                        out.add((name, "==", value))
    return sorted(out, key=repr)


def _holds(atom, feats):
    name, op, value = atom
    v = feats.get(name)
    if v is None or type(v) is not type(value):
        return False
    return v == value if op == "==" else (v >= value if op == ">=" else v <= value)


def _satisfying(atom, kernels, level):
    """{(kernel index, entity index)} of the entities at `level` where `atom` holds."""
    return {(k, e) for k, ents in enumerate(kernels) for e, f in enumerate(ents[level]) if _holds(atom, f)}


def _kernels_of(pairs):
    return {k for k, _ in pairs}


def _best_conjunction(level, failing, good):
    """Greedy: add the atom that keeps every failing kernel covered and leaves the fewest good ones."""
    atoms = _atoms(level, failing)
    on_failing = {a: _satisfying(a, failing, level) for a in atoms}
    on_good = {a: _satisfying(a, good, level) for a in atoms}
    everyone = set(range(len(failing)))
    chosen, cover_f, cover_g = [], None, None
    for _ in range(MAX_ATOMS):
        best = None
        for atom in atoms:
            if atom in chosen:
                continue
            f = on_failing[atom] if cover_f is None else cover_f & on_failing[atom]
            if _kernels_of(f) != everyone:
                continue
            g = on_good[atom] if cover_g is None else cover_g & on_good[atom]
            if best is None or len(_kernels_of(g)) < len(_kernels_of(best[2])):
                best = (atom, f, g)
        if best is None:
            return None
        chosen.append(best[0])
        cover_f, cover_g = best[1], best[2]
        if not cover_g:
            return chosen
    return None


def synthesize(failing_features, good_features):
    """(level, atoms) of the simplest separating conjunction, or None; each argument holds one IR feature list
    (the compiler port's `features`) per kernel."""
    failing = [entities(f) for f in failing_features]
    good = [entities(f) for f in good_features]
    found = []
    for level in LEVELS:
        atoms = _best_conjunction(level, failing, good)
        if atoms:
            found.append((len(atoms), LEVELS.index(level), level, atoms))
    if not found:
        return None
    _, _, level, atoms = min(found)
    return level, atoms


def _condition(atom):
    name, op, value = atom
    return {"feature": name, "op": op, "value": value}


def _text(atoms):
    return " and ".join("%s %s %s" % a for a in atoms)


def category(signature):
    """The verifier category a learned rule for this failure signature belongs to."""
    stage, kind, diag_id = signature.split("|")[:3]
    m = re.match(r"CAKE-([A-Z]+)-", diag_id)
    if m and m.group(1) in _CATEGORY:
        return _CATEGORY[m.group(1)]
    if stage == "runtime":
        return _RUNTIME_CATEGORY.get(kind, "data consistency")
    return "resources"


def rule(rule_id, signature, level, atoms, count, fix_hint):
    """A declarative rule object for a cluster of `count` failures with `signature`."""
    label = {"kernel": "the kernel", "role": "role {role.name}", "region": "region {region.name}",
             "barrier": "barrier {barrier.name}", "op": "this {op.kind}"}[level]
    return {
        "id": rule_id,
        "category": category(signature),
        "severity": "error",
        "doc": "Learned from %d recurring failures (%s): kernels where %s." % (count, signature, _text(atoms)),
        "when": _condition(atoms[0]),
        "and": [_condition(a) for a in atoms[1:]],
        "message": "%s matches a recurring failure pattern (%s): %s" % (label, signature.split("|")[1], _text(atoms)),
        "fix_hint": fix_hint,
    }


def next_id(taken):
    """The first CAKE-LEARNED-NNN id not in `taken`."""
    n = 1
    while "CAKE-LEARNED-%03d" % n in taken:
        n += 1
    return "CAKE-LEARNED-%03d" % n
