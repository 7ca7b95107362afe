"""Flags and the bind policy: loopback is open, anything else needs TLS, a token or an explicit override."""

import pytest

from compiler.service import auth
from compiler.service.main import options_from, parse_args


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.1.2.3"])
def test_loopback(host):
    assert auth.is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "example.com"])
def test_not_loopback(host):
    assert not auth.is_loopback(host)


def test_remote_bind_needs_credentials(tmp_path, monkeypatch):
    monkeypatch.delenv("CAKE_TOKEN", raising=False)
    with pytest.raises(ValueError, match="refusing to serve 0.0.0.0"):
        options_from(parse_args(["--host", "0.0.0.0"]))
    assert options_from(parse_args(["--host", "0.0.0.0", "--insecure-allow-remote"])).token is None
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    assert options_from(parse_args(["--host", "0.0.0.0", "--token-file", str(token)])).token == "t0ken"
    monkeypatch.setenv("CAKE_TOKEN", "from-env")
    assert options_from(parse_args(["--host", "0.0.0.0"])).token == "from-env"


def test_empty_token_file_is_refused(tmp_path):
    empty = tmp_path / "token"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        options_from(parse_args(["--token-file", str(empty)]))


def test_tls_flags_go_together():
    with pytest.raises(SystemExit):
        parse_args(["--tls-cert", "cert.pem"])


def test_defaults():
    o = options_from(parse_args([]))
    assert (o.host, o.port, o.compile_workers) == ("127.0.0.1", 50051, 2)
