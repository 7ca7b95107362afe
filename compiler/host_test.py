"""The host record CPU benchmarks write."""

from compiler import host


def test_the_record_names_the_host_its_load_and_the_packages_asked_for():
    r = host.record("pytest", "no_such_package_here")
    assert r["cores"] >= 1 and r["cpu"] and r["python"].count(".") == 2 and len(r["load_average"]) == 3
    assert r["date"].endswith("Z") and isinstance(r["nice"], int)
    assert r["no_such_package_here"] is None and r["pytest"]  # a missing package is None, not an error
    assert set(r) >= {"platform", "cake_commit", "autogroup"}


def test_the_commit_is_cake_commit_when_set(monkeypatch):
    monkeypatch.setenv("CAKE_COMMIT", "0123abc")  # a copy of the tree inside another checkout says which it is
    assert host.record()["cake_commit"] == "0123abc"
    monkeypatch.delenv("CAKE_COMMIT")
    assert host.commit("/nonexistent") is None
