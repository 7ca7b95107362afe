"""Unified diffs placed by their text, with line numbers a model got wrong, and clear errors for ones that do not fit."""

import pytest

from agent.authors import diffs

PARENT = "kernel k {\n  region s { stages: 2 }\n  role r {\n    warps: 4\n  }\n  region t { stages: 2 }\n}\n"


def test_a_hunk_applies_where_its_text_is_even_with_a_wrong_line_number():
    diff = "--- parent\n+++ child\n@@ -40,3 +40,3 @@\n kernel k {\n-  region s { stages: 2 }\n+  region s { stages: 3 }\n"
    assert diffs.apply(PARENT, diff) == PARENT.replace("s { stages: 2", "s { stages: 3")


def test_of_two_places_the_one_nearest_the_stated_line_wins_and_hunks_apply_in_order():
    diff = "@@ -6,1 +6,1 @@\n-  region t { stages: 2 }\n+  region t { stages: 4 }\n@@ -4,1 +4,2 @@\n"
    with pytest.raises(diffs.DiffError, match="hunk 2 has no context or removed line"):
        diffs.apply(PARENT, diff)
    two = "@@ -1,2 +1,2 @@\n kernel k {\n-  region s { stages: 2 }\n+  region s { stages: 1 }\n" \
          "@@ -4,1 +4,1 @@\n-    warps: 4\n+    warps: 8\n"
    assert diffs.apply(PARENT, two) == PARENT.replace("s { stages: 2", "s { stages: 1").replace("warps: 4", "warps: 8")


def test_a_hunk_that_fits_nowhere_names_itself_and_its_first_line():
    with pytest.raises(diffs.DiffError, match=r"hunk 1 does not match the parent's text from its line 1 on "
                                              r"\(its first line: '  region q \{ stages: 2 \}'\)"):
        diffs.apply(PARENT, "@@ -2,1 +2,1 @@\n-  region q { stages: 2 }\n+  region q { stages: 3 }\n")
    with pytest.raises(diffs.DiffError, match="no @@ hunk header"):
        diffs.apply(PARENT, "just prose")
    assert diffs.is_diff("x\n@@ -1 +1 @@\n-a\n+b\n") and not diffs.is_diff(PARENT)
