"""Cache and state locations: explicit variables, then TEST_TMPDIR, then XDG, then the home directory."""

import os

import pytest

from compiler import locations

VARIABLES = ("CAKE_CACHE_DIR", "CAKE_STATE_DIR", "TEST_TMPDIR", "XDG_CACHE_HOME", "XDG_STATE_HOME")


@pytest.fixture
def env(monkeypatch, tmp_path):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return monkeypatch


def test_home_defaults_follow_xdg(env, tmp_path):
    home = str(tmp_path / "home")
    assert locations.cache_dir() == os.path.join(home, ".cache", "cake")
    assert locations.state_dir() == os.path.join(home, ".local", "state", "cake")


def test_xdg_variables_move_both(env, tmp_path):
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xc"))
    env.setenv("XDG_STATE_HOME", str(tmp_path / "xs"))
    assert locations.cache_dir() == str(tmp_path / "xc" / "cake")
    assert locations.state_dir() == str(tmp_path / "xs" / "cake")


def test_a_relative_xdg_value_is_ignored(env, tmp_path):
    env.setenv("XDG_CACHE_HOME", "relative/cache")
    assert locations.cache_dir() == os.path.join(str(tmp_path / "home"), ".cache", "cake")


def test_bazel_test_keeps_everything_in_test_tmpdir(env, tmp_path):
    env.setenv("XDG_CACHE_HOME", str(tmp_path / "xc"))
    env.setenv("TEST_TMPDIR", str(tmp_path / "t"))
    assert locations.cache_dir() == str(tmp_path / "t" / "cake-cache")
    assert locations.state_dir() == str(tmp_path / "t" / "cake-state")


def test_explicit_variables_win(env, tmp_path):
    env.setenv("TEST_TMPDIR", str(tmp_path / "t"))
    env.setenv("CAKE_CACHE_DIR", str(tmp_path / "c"))
    env.setenv("CAKE_STATE_DIR", str(tmp_path / "s"))
    assert locations.cache_dir() == str(tmp_path / "c")
    assert locations.state_dir() == str(tmp_path / "s")


def test_under_bazel_test_nothing_points_at_home():
    if "TEST_TMPDIR" not in os.environ:
        pytest.skip("runs under bazel test only")
    for where in (locations.cache_dir(), locations.state_dir()):
        assert where.startswith(os.environ["TEST_TMPDIR"])
