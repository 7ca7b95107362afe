"""A real MCP client session over stdio (the official SDK's client) against `python -m compiler.mcp.main`."""

import json
import os
import sys

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from compiler.corpus import known_bad

BAD = next(b for b in known_bad.programs() if b.id == "CAKE-SYNC-004")
TOOLS = {"verify", "analyze", "compile", "explain_rule", "list_primitives"}


def _params():
    env = {k: v for k, v in os.environ.items()}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return StdioServerParameters(command=sys.executable, args=["-m", "compiler.mcp.main"], env=env)


def _structured(result):
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    return json.loads(result.content[0].text)


async def _session_checks():
    out = {}
    with open(BAD.path) as f:
        bad_text = f.read()
    async with stdio_client(_params()) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            out["server"] = init.server_info.name
            out["tools"] = {t.name for t in (await session.list_tools()).tools}
            out["verify"] = _structured(await session.call_tool("verify", {"program": bad_text}))
            out["syntax"] = _structured(await session.call_tool("verify", {"program": "kernel k {\n  bogus\n}\n"}))
            out["rule"] = _structured(await session.call_tool("explain_rule", {"rule_id": BAD.id}))
            out["unknown_rule"] = await session.call_tool("explain_rule", {"rule_id": "CAKE-NOPE-000"})
            out["resources"] = {str(r.uri) for r in (await session.list_resources()).resources}
            grammar = await session.read_resource("cake://docs/ir_text.md")
            out["grammar"] = grammar.contents[0].text
    return out


@pytest.fixture(scope="module")
def session():
    return anyio.run(_session_checks)


def test_the_server_lists_its_tools_and_no_measure_without_a_gpu_flag(session):
    assert session["server"] == "cake"
    assert session["tools"] == TOOLS


def test_verify_returns_the_expected_diagnostic_at_its_path_and_line(session):
    v = session["verify"]
    assert v["valid"] is False
    d = next(d for d in v["diagnostics"] if d["id"] == BAD.id)
    assert d["path"] == BAD.ir_path and d["location"]["line"] > 0 and d["fix_hint"]
    assert ": error[%s]: " % BAD.id in v["text"]


def test_a_syntax_error_is_a_located_diagnostic(session):
    d = session["syntax"]["diagnostics"][0]
    assert session["syntax"]["valid"] is False
    assert (d["id"], d["location"]["line"]) == ("CAKE-SYNTAX-001", 2)


def test_explain_rule_gives_doc_fix_and_an_example(session):
    rule = session["rule"]
    assert rule["id"] == BAD.id and rule["doc"] and rule["fix_hint"]
    assert rule["examples"] and rule["examples"][0]["resource"].startswith("cake://corpus/bad/")
    assert session["unknown_rule"].is_error and "no rule 'CAKE-NOPE-000'" in session["unknown_rule"].content[0].text


def test_resources_hold_the_docs_grammar_protos_and_corpus(session):
    r = session["resources"]
    assert {"cake://docs/ir.md", "cake://docs/ir_text.md", "cake://proto/ir.proto"} <= r
    assert "cake://corpus/good/gemm_sm90a" in r and "cake://corpus/bad/" + os.path.basename(BAD.path)[:-5] in r
    assert "kernel" in session["grammar"]
