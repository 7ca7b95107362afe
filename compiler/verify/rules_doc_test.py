"""docs/verifier_rules.md is generated from the registry: every rule is documented, and the file is current."""

from compiler.verify import RULES, rules_doc


def test_doc_is_current():
    with open(rules_doc.DOC) as f:
        assert f.read() == rules_doc.render(), "run: python -m compiler.verify.rules_doc --write"


def test_every_rule_has_a_row():
    text = rules_doc.render()
    for r in RULES:
        assert "\n| %s | %s |" % (r.id, r.severity_name) in text
