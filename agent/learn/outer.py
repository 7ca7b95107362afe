"""The self-evolving outer loop: runs' failures and measurements -> gated proposals -> knowledge files.

After a run (or on demand, `evolve --learn-only`), `learn` reads every run database
under the runs roots (agent/places.py) and makes five kinds of proposal:
- rule: failure clusters (learn/signatures.py) that recur on at least
  `min_recurrence` distinct kernels, found after verification passed (analysis,
  build, runtime) and not already caught by a learned rule, become declarative
  verifier rules (learn/rules.py) separating them from known-good kernels;
- calibration: a refit of the cost model's constants on all measurements;
- weights: new tactic prior weights from the runs' tactic outcomes, per seed family and mode;
- repairs: each diagnostic's repair tactics reordered by how often they fixed it (learn/repair_order.py);
- macro: pairs of rewrite tactics that made measured kernels faster at both steps, in
  enough lineages (learn/macros.py), each gated by replaying its task with and without it.
Each goes through its gate (learn/gate.py); accepted ones become the next version of
their knowledge file in the learned store (learn/knowledge.py: the checkout's files
change only when promoted), and every proposal is recorded in the current run's
database (proposals table) with the gate's verdict. Every question to the compiler
(features, verification with a proposed rule, the refit) goes through the compiler
port the caller gives.
"""

import glob
import json
import os

from compiler.ir.text import parse_kernel, print_kernel

from agent.compiler_port import Refused
from agent.learn import calibrate, gate, knowledge, macros, repair_order, rules as rules_mod, signatures, weights
from agent.store import FILE as STORE_FILE, Store

RULE_STAGES = ("analysis", "build", "runtime")
MAX_GOOD = 500  # passing candidates a rule must leave valid (plus the whole good corpus)


def run_databases(runs_roots):
    """The agent.db of every run directory directly under each of `runs_roots`."""
    return sorted(p for root in runs_roots for p in glob.glob(os.path.join(root, "*", STORE_FILE)))


def _collect(paths):
    """(failure rows with ir_text, passing (hash, ir_text), {run id: (context, tactic stats)}, calibration pairs,
    {(kind, signature)} of the proposals some run recorded as refused)."""
    failures, passing, stats, pairs, refused = [], {}, {}, [], set()
    for path in paths:
        s = Store(path)
        try:
            run = s.run()
            rows = s.db.execute("SELECT f.*, c.ir_text FROM failures f JOIN candidates c ON c.id = f.candidate_id")
            failures += [dict(r) for r in rows]
            for r in s.db.execute("SELECT ir_hash, ir_text FROM candidates WHERE fitness_s IS NOT NULL ORDER BY fitness_s"):
                passing.setdefault(r["ir_hash"], r["ir_text"])
            if run:
                stats[run["id"]] = (weights.context(json.loads(run["task"]), run["mode"]), s.tactic_stats())
            pairs += s.calibration_pairs()
            refused |= {(p["kind"], p["signature"]) for p in s.proposals() if p["status"] == "refused"}
        finally:
            s.close()
    return failures, passing, stats, pairs, refused


def learned_rules(source):
    """rules.json of `source` (a Knowledge or a directory), with its rules and targets."""
    doc = knowledge.of(source).load(knowledge.RULES, {"version": 0, "changelog": [], "rules": [], "targets": {}})
    doc.setdefault("rules", [])
    doc.setdefault("targets", {})
    return doc


def _targets(kb, doc):
    """rule id -> [(file name, kernel)] of the programs each learned rule was accepted against."""
    out = {}
    for rid, files in doc["targets"].items():
        out[rid] = []
        for name in files:
            with open(kb.path(name)) as f:
                out[rid].append((name, parse_kernel(f.read(), filename=name).kernel))
    return out


def _caught(port, known, kernel):
    """Whether one of the `known` learned rules (as data) rejects `kernel`."""
    ids = {r["id"] for r in known}
    return any(d.id in ids for d in port.verify(kernel, extra_rules=known))


def _rule_proposals(kb, port, failures, passing, min_recurrence, record, log):
    doc = learned_rules(kb)
    eligible = [f for f in failures if f["stage"] in RULE_STAGES and f["kind"] != "task_mismatch"]
    good = [(h[:16], parse_kernel(text).kernel) for h, text in list(passing.items())[:MAX_GOOD]]
    good_features = None  # the known-good kernels' IR features, asked once when a cluster needs them
    for sig, rows in signatures.cluster(eligible).items():
        if len(rows) < min_recurrence:
            continue
        kernels = [(r["ir_hash"][:16], parse_kernel(r["ir_text"]).kernel) for r in rows]
        if doc["rules"] and all(_caught(port, doc["rules"], k) for _, k in kernels):
            continue  # an earlier learned rule catches these already
        if good_features is None:
            good_features = [port.features(k) for _, k in good + gate.good_corpus()]
        found = rules_mod.synthesize([port.features(k) for _, k in kernels], good_features)
        if found is None:
            record("rule", sig, {"count": len(rows)}, gate.Verdict(False, "no IR feature conjunction separates them"
                                                                   " from known-good kernels"), None)
            continue
        level, atoms = found
        taken = {r.id for r in port.rules()} | {r["id"] for r in doc["rules"]}
        rule = rules_mod.rule(rules_mod.next_id(taken), sig, level, atoms, len(rows),
                              "avoid this combination: the agent saw it fail %d times (%s)" % (len(rows), sig))
        verdict = gate.gate_rule(port, rule, doc["rules"], kernels, good, _targets(kb, doc))
        version = None
        if verdict.accepted:
            version = _accept_rule(kb, rule, kernels, verdict)
            doc = learned_rules(kb)
            log("learned verifier rule %s: %s (knowledge/rules.json v%d)" % (rule["id"], rule["doc"], version))
        record("rule", sig, rule, verdict, version)


def _accept_rule(kb, rule, kernels, verdict):
    files = {"gate/%s/%s.cake" % (rule["id"], name): "# expect: %s\n# a candidate that failed with the rule's "
             "signature\n%s" % (rule["id"], print_kernel(kernel)) for name, kernel in kernels}
    patch = {"append": {"rules": [rule]}, "update": {"targets": {rule["id"]: sorted(files)}}}
    return kb.accept(knowledge.RULES, patch, "rule %s: %s" % (rule["id"], rule["doc"]), proposal=rule["id"],
                     evidence=verdict.details, files=files)


def _calibration_proposal(kb, port, pairs, record, log):
    sig = "calibration|%d pairs" % len(pairs)
    try:
        refit = calibrate.propose(port, pairs, calibrate.current_data(kb), calibrate.next_version(kb))
    except Refused as e:
        record("calibration", sig, {"pairs": len(pairs)}, gate.Verdict(False, "the compiler refused the refit: %s" % e),
               None)
        return
    if refit is None:
        return
    verdict = gate.gate_calibration(refit.error_before, refit.error_after)
    version = None
    if verdict.accepted:
        version = calibrate.write(kb, refit, "recalibrated from %d measurements" % len(pairs),
                                  dict(verdict.details, pairs=len(pairs)))
        log("recalibrated the cost model: %s (calibration.json v%d, learned)" % (verdict.why, version))
    record("calibration", sig, {"constants": refit.constants}, verdict, version)


def _weights_proposal(kb, stats, record, log):
    for ctx, changes, outcomes, runs in weights.propose(kb.load(knowledge.TACTICS), stats):
        verdict = gate.gate_weights(changes, outcomes)
        version = None
        if verdict.accepted:
            version = kb.accept(knowledge.TACTICS, weights.patch(ctx, changes, runs, kb.load(knowledge.TACTICS)),
                                "tactic weights for %s from %d runs" % (ctx, len(runs)), evidence=verdict.details)
            log("updated %d tactic weights for %s (tactics.json v%d, learned)" % (len(changes), ctx, version))
        record("weights", "weights|%s|%d runs" % (ctx, len(runs)), {t: list(v) for t, v in changes.items()}, verdict,
               version)


def _macro_proposals(kb, port, paths, refused, record, log):
    from agent import task as task_mod

    doc = kb.load(knowledge.TACTICS)
    listed = {t["name"]: t for t in doc["tactics"]}
    rewrites = {n for n, t in listed.items() if t["kind"] == "rewrite"}
    known = [tuple(t["steps"]) for t in listed.values() if t["kind"] == "macro"]
    baselines = {}  # task name -> the replays without any new macro: one set serves every macro of the task
    for candidate, tasks in macros.mine(paths, rewrites, known):
        item = macros.tactic_item(candidate)
        sig = "macro|%s|%d lineages" % (item["name"], candidate.support)
        if ("macro", sig) in refused:
            continue  # gated on this evidence already: replay again only when more lineages back it
        if len(tasks) != 1:
            record("macro", sig, item, gate.Verdict(False, "mined from runs of %d tasks: replay needs one" % len(tasks)),
                   None)
            continue
        task = task_mod.Task.from_json(json.loads(next(iter(tasks.values()))))
        log("replaying %s with and without macro %s" % (task.name, item["name"]))
        verdict, baselines[task.name] = macros.judge(item, task, kb, port, baselines.get(task.name))
        version = None
        if verdict.accepted:
            version = macros.accept(kb, item, verdict)
            log("learned macro-tactic %s: %s (tactics.json v%d, learned)" % (item["name"], verdict.why, version))
        record("macro", sig, item, verdict, version)


def _repair_order_proposal(kb, paths, record, log):
    by_id = kb.load(knowledge.REPAIRS)["by_id"]
    changes = repair_order.propose(by_id, repair_order.outcomes(paths, by_id))
    if not changes:
        return
    verdict = gate.gate_repair_order(changes)
    version = None
    if verdict.accepted:
        version = kb.accept(knowledge.REPAIRS, {"update": {"by_id": {d: new for d, (_, new, _) in changes.items()}}},
                            "repair order by success over %d runs: %s" % (len(paths), "; ".join(
                                repair_order.describe(changes))),
                            evidence=dict(verdict.details, runs=[os.path.basename(os.path.dirname(p)) for p in paths]))
        log("reordered the repairs of %s (repairs.json v%d, learned)" % (", ".join(sorted(changes)), version))
    record("repairs", "repairs|%s|%d runs" % (",".join(sorted(changes)), len(paths)),
           {d: {"old": old, "new": new, "trials": counts} for d, (old, new, counts) in changes.items()}, verdict,
           version)


def learn(runs_roots, kb, port, store=None, min_recurrence=3, log=print):
    """Make, gate and record proposals from every run under `runs_roots` (a list of directories) into `kb`
    (a Knowledge with a learned store), asking the compiler through `port` (agent/compiler_port.py);
    returns [(kind, signature, verdict)]."""
    paths = run_databases(runs_roots)
    failures, passing, stats, pairs, refused = _collect(paths)
    results = []

    def record(kind, sig, payload, verdict, version):
        results.append((kind, sig, verdict))
        if store is not None:
            store.add_proposal(kind, sig, json.loads(json.dumps(payload, default=str)),
                               "accepted" if verdict.accepted else "refused", verdict.to_dict(), version)

    _rule_proposals(kb, port, failures, passing, min_recurrence, record, log)
    _calibration_proposal(kb, port, pairs, record, log)
    _weights_proposal(kb, stats, record, log)
    _repair_order_proposal(kb, paths, record, log)
    _macro_proposals(kb, port, paths, refused, record, log)
    return results
