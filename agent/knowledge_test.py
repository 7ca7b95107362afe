"""Knowledge layers: runs record accepted changes outside the checkout; promotion writes them as a minimal diff."""

import difflib
import glob
import json
import os

import pytest

from agent.learn import knowledge
from agent.testing import knowledge_store

BASE_DOC = knowledge.read(knowledge.PACKAGE_DIR, knowledge.TACTICS)  # the checkout's tactics.json
BASE = BASE_DOC["version"]


def _lines(path):
    with open(path) as f:
        return f.read().splitlines()


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(knowledge.PACKAGE_DIR, "*.json"))))
def test_the_checkouts_files_are_in_the_stable_format(path):
    with open(path) as f:
        text = f.read()
    assert knowledge.dump(json.loads(text)) == text, "reformat with agent.learn.knowledge.dump"


def test_an_accepted_change_is_layered_over_the_base_and_leaves_it_alone(tmp_path):
    kb = knowledge_store(tmp_path)
    before = open(os.path.join(kb.base, knowledge.TACTICS)).read()
    version = kb.accept(knowledge.TACTICS, {"fields": {"tactics": {"persistent": {"weight": 2.0}}},
                                            "append": {"learned_from": ["run-a"]}}, "weights from 1 run")
    assert version == BASE + 1
    doc = kb.load(knowledge.TACTICS)
    assert {t["name"]: t["weight"] for t in doc["tactics"]}["persistent"] == 2.0 and doc["learned_from"] == \
        BASE_DOC.get("learned_from", []) + ["run-a"]
    assert doc["changelog"][-1]["version"] == BASE + 1 and doc["changelog"][-1]["summary"] == "weights from 1 run"
    assert open(os.path.join(kb.base, knowledge.TACTICS)).read() == before
    assert knowledge.Knowledge(kb.base).load(knowledge.TACTICS)["version"] == BASE  # the base alone


def test_promotion_is_the_minimal_diff_and_happens_once(tmp_path):
    kb = knowledge_store(tmp_path)
    path = os.path.join(kb.base, knowledge.TACTICS)
    before = _lines(path)
    kb.accept(knowledge.TACTICS, {"fields": {"tactics": {"persistent": {"weight": 2.0}, "split_producer": {"weight": 0.5}}},
                                  "append": {"learned_from": ["run-a"]}}, "weights from 1 run")
    seen = kb.load(knowledge.TACTICS)
    [entry] = kb.promote()
    assert kb.pending() == [] and kb.promote() == []
    assert knowledge.Knowledge(kb.base).load(knowledge.TACTICS) == seen == kb.load(knowledge.TACTICS)
    changed = [l for l in difflib.unified_diff(before, _lines(path), lineterm="", n=0)
               if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    # The version line; a changelog line added (and a comma on the one before it); the two tactics' lines; the
    # learned_from line: a new entry in the list the base has (and a comma on the one before it), or a new field
    # (and a comma on the line closing the field before it).
    assert len(changed) == 2 + 3 + 2 * 2 + 3, changed
    assert '+  {"name": "persistent", "kind": "rewrite", "rewrite": "persistent", "args": {}, "weight": 2.0,' in \
        "\n".join(changed)
    assert '"learned": "%s"' % entry["id"] in "\n".join(changed)


def test_a_rule_promotion_brings_its_gate_programs(tmp_path):
    kb = knowledge_store(tmp_path)
    rule = {"id": "CAKE-LEARNED-001", "severity": "error", "doc": "d", "when": {}, "message": "m", "fix_hint": "f"}
    files = {"gate/CAKE-LEARNED-001/abc.cake": "# expect: CAKE-LEARNED-001\n"}
    kb.accept(knowledge.RULES, {"append": {"rules": [rule]}, "update": {"targets": {rule["id"]: sorted(files)}}},
              "rule", proposal=rule["id"], files=files)
    assert kb.path("gate/CAKE-LEARNED-001/abc.cake").startswith(kb.learned)
    kb.promote()
    assert open(os.path.join(kb.base, "gate/CAKE-LEARNED-001/abc.cake")).read() == files["gate/CAKE-LEARNED-001/abc.cake"]
    assert knowledge.read(kb.base, knowledge.RULES)["rules"] == [rule]


def test_a_base_that_already_holds_a_change_skips_it(tmp_path):
    kb = knowledge_store(tmp_path)
    kb.accept(knowledge.TACTICS, {"fields": {"tactics": {"persistent": {"weight": 2.0}}}}, "w")
    other = knowledge.Knowledge(str(tmp_path / "other"), kb.learned)  # another checkout, promoted there first
    os.makedirs(other.base)
    knowledge.write(other.base, knowledge.TACTICS, kb.load(knowledge.TACTICS))
    assert other.pending() == [] and other.load(knowledge.TACTICS)["version"] == BASE + 1
    assert len(kb.pending()) == 1


def test_runs_cannot_write_without_a_learned_store(tmp_path):
    with pytest.raises(ValueError, match="read-only"):
        knowledge.Knowledge(knowledge.PACKAGE_DIR).accept(knowledge.TACTICS, {}, "x")
