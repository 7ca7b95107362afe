"""The LLM author against a local HTTP server that replays recorded chat answers (agent/testdata/llm_replay.json)."""

import contextlib
import http.server
import json
import os
import random
import threading

import pytest

from agent import evolve
from agent.authors import prompt
from agent.authors.base import Context, Parent
from agent.authors.llm import ChatClient, LlmAuthor, LlmError
from agent.store import Store
from agent.testing import knowledge_copy, small_task
from compiler.analysis import analyze
from compiler.ir.text import print_kernel
from kernels.kmeans.schedules import assign_sm90a

ANSWERS = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "llm_replay.json")))


@contextlib.contextmanager
def replay_server(answers, cycle=False):
    """An OpenAI-compatible /v1/chat/completions endpoint answering `answers` in order; yields (url, requests)."""
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            i = len(requests) - 1
            content = answers[i % len(answers)] if cycle or i < len(answers) else "I have nothing more."
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/v1" % server.server_address[1], requests
    finally:
        server.shutdown()
        server.server_close()


def _parent():
    k = assign_sm90a()
    diags = [{"severity": "warning", "diag_id": "CAKE-RES-999", "path": "kernel.roles[1]", "message": "a warning",
              "fix_hint": "a hint"}]
    return Parent(1, k, None, print_kernel(k), 3.3e-5, diags, analyze(k, {"B": 1, "N": 65536, "K": 1024}))


def test_the_author_sends_ir_diagnostics_and_cost_and_retries_a_parse_error_once():
    with replay_server(ANSWERS["answers"]) as (url, requests):
        author = LlmAuthor(ChatClient(url, "sk-test", "replay-model"), small_task(), log=lambda *_: None)
        [p] = author.propose(_parent(), Context(random.Random(0), lambda k: True))
    assert p.kernel == assign_sm90a(stages=2, block_k=64) and (p.tactic, p.author, p.genome) == ("llm", "llm", None)
    first, second = requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "replay-model"
    user = first["body"]["messages"][1]["content"]
    assert print_kernel(assign_sm90a()) in user
    assert "CAKE-RES-999 at kernel.roles[1]: a warning (fix: a hint)" in user
    assert "bottleneck wgmma" in user and "predicted 33.29" in user
    retry = second["body"]["messages"][-1]["content"]
    assert retry.startswith("That does not parse: <llm answer>:") and "stagez" in retry


def test_an_answer_that_never_parses_gives_no_kernel():
    logged = []
    with replay_server(["no IR here", "still none"]) as (url, _):
        author = LlmAuthor(ChatClient(url, "", "m"), small_task(), log=logged.append)
        assert author.propose(_parent(), Context(random.Random(0), lambda k: True)) == []
    assert logged and logged[0].startswith("LLM author: no kernel")


def test_configuration_comes_from_the_environment():
    with pytest.raises(LlmError, match="OPENAI_BASE_URL and CAKE_LLM_MODEL"):
        ChatClient.from_env({})
    c = ChatClient.from_env({"OPENAI_BASE_URL": "http://h/v1/", "CAKE_LLM_MODEL": "m", "OPENAI_API_KEY": "k"})
    assert (c.url, c.model, c.api_key) == ("http://h/v1/chat/completions", "m", "k")
    with pytest.raises(LlmError, match="failed"):
        ChatClient("http://127.0.0.1:9/v1", "", "m", timeout_s=2).chat([])


def test_evolve_without_the_llm_environment_says_what_is_missing_and_records_nothing(tmp_path, monkeypatch, capsys):
    for name in ("OPENAI_BASE_URL", "CAKE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    assert evolve.main(["--run-dir", str(tmp_path / "runs" / "r"), "--knowledge-dir", knowledge_copy(tmp_path),
                        "--gpu", "off", "--in-process", "--plain", "--author", "llm"]) == 2
    assert capsys.readouterr().err == ("evolve: --author llm: the LLM author needs OPENAI_BASE_URL and CAKE_LLM_MODEL"
                                       " in the environment\n")
    assert not (tmp_path / "runs").exists()


def test_extract_ir_takes_the_fenced_kernel_or_the_first_kernel_line():
    assert prompt.extract_ir("x\n```\nnot ir\n```\n```cake\nkernel k {}\n```") == "kernel k {}\n"
    assert prompt.extract_ir("Here:\nkernel k {\n}") == "kernel k {\n}\n"


def test_evolve_with_the_llm_author_records_its_candidates(tmp_path, monkeypatch, capsys):
    with replay_server(ANSWERS["answers"][1:], cycle=True) as (url, requests):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("CAKE_LLM_MODEL", "replay-model")
        run_dir = str(tmp_path / "runs" / "r")
        assert evolve.main(["--run-dir", run_dir, "--knowledge-dir", knowledge_copy(tmp_path), "--gpu", "off",
                            "--in-process", "--plain", "--no-learn", "--author", "mixed", "--evaluations", "8"]) == 0
    s = Store(os.path.join(run_dir, "agent.db"))
    [llm] = [r for r in s.candidates() if r["author"] == "llm"]  # later answers repeat it: duplicates
    assert llm["genome"] is None and llm["fitness_s"] is not None
    assert {r["author"] for r in s.candidates()} >= {"seed", "llm", "search"}
    assert requests and "report: " in capsys.readouterr().out
