"""The LLM author against a local HTTP server that replays recorded chat answers (agent/testdata/llm_replay.json):
what it is taught and shown (grammar, op catalogue, the run's elites and failures), edits as diffs, several samples
per call, and the tokens and cost it spends, in the store and the report."""

import contextlib
import http.server
import json
import os
import random
import threading

import pytest

from agent import evolve, report
from agent.authors import llm, prompt
from agent.authors.base import Context, Parent
from agent.authors.llm import ChatClient, LlmAuthor, LlmError
from agent.authors.population import Population
from agent.compiler_port import process_port
from agent.store import Store
from agent.testing import knowledge_copy, small_task
from compiler.analysis import analyze
from compiler.ir.hashing import ir_hash
from compiler.ir.text import print_kernel
from kernels.kmeans.schedules import assign_sm90a

ANSWERS = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "llm_replay.json")))


@contextlib.contextmanager
def replay_server(answers, cycle=False, usage=None):
    """An OpenAI-compatible /v1/chat/completions endpoint answering `answers` in order (an answer: one choice's
    text, or a list of choices), with `usage` (token counts) in each answer when given; yields (url, requests)."""
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            i = len(requests) - 1
            content = answers[i % len(answers)] if cycle or i < len(answers) else "I have nothing more."
            choices = [{"message": {"role": "assistant", "content": c}}
                       for c in (content if isinstance(content, list) else [content])]
            answer = dict({"choices": choices}, **({"usage": usage} if usage else {}))
            data = json.dumps(answer).encode()
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


class _Diag:
    """A verifier diagnostic as Store.record takes it."""

    def __init__(self, diag_id, path, message, fix_hint, severity=1):
        self.id, self.path, self.message, self.fix_hint, self.severity = diag_id, path, message, fix_hint, severity


def _population(tmp_path):
    """A run's store with the parent, a faster kernel of another schedule, a slower one of the parent's, and a
    rejected attempt with its error."""
    store = Store(str(tmp_path / "agent.db"))
    store.start_run("r", small_task().to_json(), {}, "measure", 0)
    for kernel, fitness in ((assign_sm90a(), 3.3e-5), (assign_sm90a(stages=2, block_k=64), 2.9e-5),
                            (assign_sm90a(name="kmeans_assign_copy"), 3.6e-5)):
        cid = store.insert_candidate(ir_hash(kernel), print_kernel(kernel), None, None, "seed", "seed", 0)
        store.record(cid, "measured", fitness)
    bad = assign_sm90a(stages=5)
    cid = store.insert_candidate(ir_hash(bad), print_kernel(bad), None, 1, "llm", "llm", 1)
    store.record(cid, "invalid", None, [("verify", _Diag("CAKE-RES-001", "kernel.regions[3]", "shared memory "
                                                         "overflows by 9 KB", "fewer stages"))])
    return Population(store)


def _author(url, tmp_path, samples=1, prices=(None, None)):
    population = _population(tmp_path)
    client = ChatClient(url, "sk-test", "replay-model", samples=samples, usd_per_mtok=prices)
    return LlmAuthor(client, small_task(), population, process_port().primitives(), True, log=lambda *_: None)


def test_the_author_is_taught_the_language_shown_the_run_and_retries_a_parse_error_once(tmp_path):
    with replay_server(ANSWERS["answers"]) as (url, requests):
        [p] = _author(url, tmp_path).propose(_parent(), Context(random.Random(0), lambda k: True))
    assert p.kernel == assign_sm90a(stages=2, block_k=64) and (p.tactic, p.author, p.genome) == ("llm", "llm", None)
    first, second = requests
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer sk-test"
    assert first["body"]["model"] == "replay-model" and first["body"]["n"] == 1
    system, user = (m["content"] for m in first["body"]["messages"])
    assert "Value forms" in system and "  tma_load { src: <GlobalRef>;" in system  # the grammar
    assert "- tma_load: " in system and "targets sm_90a" in system  # the compiler's op catalogue
    assert print_kernel(assign_sm90a()) in user
    assert "CAKE-RES-999 at kernel.roles[1]: a warning (fix: a hint)" in user
    assert "bottleneck wgmma" in user and "predicted 33.29" in user
    # The elites, fastest first, one per schedule: #2 (its own niche, shown in full), then the parent (#3 shares it).
    assert "#2: 29.000 us measured on the GPU" in user and print_kernel(assign_sm90a(stages=2, block_k=64)) in user
    assert "#1: 33.000 us measured on the GPU, by seed (seed)" in user and "(the kernel above)" in user
    assert "#3:" not in user
    assert "#4 by llm (llm): invalid\nerror CAKE-RES-001 at kernel.regions[3]: shared memory overflows" in user
    assert user.endswith("Answer with a unified diff against kernel #1's text (```diff), or the whole kernel (```cake).")
    retry = second["body"]["messages"][-1]["content"]
    assert retry.startswith("That does not parse: <llm answer>:") and "stagez" in retry


def test_several_samples_in_one_call_each_give_a_kernel_and_a_diff_edits_the_parent(tmp_path):
    parent = _parent()
    line = next(l for l in parent.ir_text.splitlines() if "region sCols" in l)
    diff = "```diff\n--- a\n+++ b\n@@ -99,1 +99,1 @@\n-%s\n+%s\n```" % (line, line.replace("stages: 3", "stages: 4"))
    with replay_server([[diff, ANSWERS["answers"][1], "no kernel here"]], usage={"prompt_tokens": 9000,
                                                                                   "completion_tokens": 700}) as (url, requests):
        author = _author(url, tmp_path, samples=3, prices=(3.0, 15.0))
        kernels = [p.kernel for p in author.propose(parent, Context(random.Random(0), lambda k: True))]
    assert len(requests) == 1 and requests[0]["body"]["n"] == 3  # two samples gave kernels: no retry
    edited = assign_sm90a()
    next(r for r in edited.regions if r.name == "sCols").stages = 4  # only the line the diff changed
    assert kernels == [edited, assign_sm90a(stages=2, block_k=64)]
    usage = author.population.store.meta(llm.USAGE)
    assert usage == {"calls": 1, "samples": 3, "prompt_tokens": 9000, "completion_tokens": 700, "unreported_calls": 0,
                     "cost_usd": pytest.approx(0.0375), "model": "replay-model"}
    assert report.llm_usage_text(usage) == ("replay-model: 1 calls, 3 samples, 9000 prompt + 700 completion tokens, "
                                           "$0.0375")


def test_a_diff_that_does_not_apply_is_sent_back_and_unreported_tokens_are_counted_as_such(tmp_path):
    bad = "```diff\n@@ -3,1 +3,1 @@\n-  region nowhere { }\n+  region nowhere { stages: 2 }\n```"
    with replay_server([bad, ANSWERS["answers"][1]]) as (url, requests):
        author = _author(url, tmp_path)
        [p] = author.propose(_parent(), Context(random.Random(0), lambda k: True))
    retry = requests[1]["body"]["messages"][-1]["content"]
    assert retry.startswith("That does not apply: hunk 1 does not match the parent's text") and "region nowhere" in retry
    usage = author.population.store.meta(llm.USAGE)
    assert (usage["calls"], usage["unreported_calls"], usage["cost_usd"]) == (2, 2, None)
    assert report.llm_usage_text(usage).endswith("0 prompt + 0 completion tokens (2 calls reported none), cost unknown "
                                                 "(no CAKE_LLM_USD_PER_MTOK_IN/_OUT)")


def test_an_answer_that_never_parses_gives_no_kernel(tmp_path):
    logged = []
    with replay_server(["no IR here", "still none"]) as (url, _):
        author = _author(url, tmp_path)
        author.log = logged.append
        assert author.propose(_parent(), Context(random.Random(0), lambda k: True)) == []
    assert logged and logged[0].startswith("LLM author: no kernel")


def test_configuration_comes_from_the_environment():
    with pytest.raises(LlmError, match="OPENAI_BASE_URL and CAKE_LLM_MODEL"):
        ChatClient.from_env({})
    c = ChatClient.from_env({"OPENAI_BASE_URL": "http://h/v1/", "CAKE_LLM_MODEL": "m", "OPENAI_API_KEY": "k"})
    assert (c.url, c.model, c.api_key, c.samples, c.usd_per_mtok) == ("http://h/v1/chat/completions", "m", "k",
                                                                      llm.DEFAULT_SAMPLES, (None, None))
    env = {"OPENAI_BASE_URL": "http://h/v1", "CAKE_LLM_MODEL": "m", "CAKE_LLM_SAMPLES": "2",
           "CAKE_LLM_USD_PER_MTOK_IN": "0.5", "CAKE_LLM_USD_PER_MTOK_OUT": "2"}
    assert (ChatClient.from_env(env).samples, ChatClient.from_env(env).usd_per_mtok) == (2, (0.5, 2.0))
    with pytest.raises(LlmError, match="CAKE_LLM_SAMPLES must be at least 1, got '0'"):
        ChatClient.from_env(dict(env, CAKE_LLM_SAMPLES="0"))
    with pytest.raises(LlmError, match="CAKE_LLM_USD_PER_MTOK_OUT must be a number, got 'cheap'"):
        ChatClient.from_env(dict(env, CAKE_LLM_USD_PER_MTOK_OUT="cheap"))
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
    usage = json.load(open(os.path.join(run_dir, "summary.json")))["llm_usage"]
    assert usage["calls"] == len(requests) and usage["model"] == "replay-model"
    assert "| LLM author | replay-model: %d calls" % len(requests) in open(os.path.join(run_dir, "report.md")).read()
