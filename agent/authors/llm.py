"""The optional LLM author: an OpenAI-compatible chat endpoint writes the next kernels as IR edits.

Off by default (`--author llm` or `mixed` turns it on). Configured from the
environment: OPENAI_BASE_URL (e.g. https://api.openai.com/v1), OPENAI_API_KEY and
CAKE_LLM_MODEL; CAKE_LLM_SAMPLES (default 4) answers are asked for per call (the chat
API's `n`); CAKE_LLM_USD_PER_MTOK_IN and _OUT, when set, price the tokens. Each call
sends the language (grammar and op catalogue) and the run's state (authors/prompt.py:
the parent, the elites of the run's population, its recent failures) and reads every
sample as an edit of the parent or a whole kernel; when no sample yields a kernel, the
first one's parse or diff error is sent back once. Tokens (as the endpoint reports
them) and their cost add up in the run's store (meta `llm_usage`), which the report
and summary show. Plain urllib: no client library, no extra dependency.
"""

import dataclasses
import json
import os
import urllib.error
import urllib.request

from compiler.ir.text import ParseError, grammar

from agent.authors import diffs, prompt
from agent.authors.base import Proposal

USAGE = "llm_usage"  # the store's meta key
DEFAULT_SAMPLES = 4


class LlmError(RuntimeError):
    """The endpoint could not be reached, answered with something other than a chat completion, or is
    configured wrongly."""


@dataclasses.dataclass(frozen=True)
class Completion:
    contents: list  # one answer per sample
    prompt_tokens: int  # as the endpoint reports them; None when it reports none
    completion_tokens: int


def _number(env, name, kind, minimum):
    raw = env.get(name)
    if raw in (None, ""):
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise LlmError("%s must be a number, got %r" % (name, raw)) from None
    if value < minimum:
        raise LlmError("%s must be at least %s, got %r" % (name, minimum, raw))
    return value


class ChatClient:
    def __init__(self, base_url, api_key, model, timeout_s=120.0, samples=1, usd_per_mtok=(None, None)):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        self.samples = samples
        self.usd_per_mtok = usd_per_mtok  # (prompt, completion) US dollars per million tokens, or None each

    @classmethod
    def from_env(cls, environ=None):
        env = os.environ if environ is None else environ
        missing = [k for k in ("OPENAI_BASE_URL", "CAKE_LLM_MODEL") if not env.get(k)]
        if missing:
            raise LlmError("the LLM author needs %s in the environment" % " and ".join(missing))
        samples = _number(env, "CAKE_LLM_SAMPLES", int, 1)
        prices = (_number(env, "CAKE_LLM_USD_PER_MTOK_IN", float, 0.0), _number(env, "CAKE_LLM_USD_PER_MTOK_OUT", float, 0.0))
        return cls(env["OPENAI_BASE_URL"], env.get("OPENAI_API_KEY", ""), env["CAKE_LLM_MODEL"],
                   samples=DEFAULT_SAMPLES if samples is None else samples, usd_per_mtok=prices)

    def chat(self, messages, samples=None):
        """The endpoint's Completion of `messages`, `samples` answers (default: the client's) asked for."""
        n = self.samples if samples is None else samples
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0.2 if n == 1 else 0.8,
                           "n": n}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = json.loads(response.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, json.JSONDecodeError) as e:
            raise LlmError("chat request to %s failed: %s" % (self.url, e)) from None
        try:
            contents = [c["message"]["content"] for c in data["choices"]]
        except (KeyError, IndexError, TypeError):
            raise LlmError("unexpected chat answer: %s" % json.dumps(data)[:300]) from None
        if not contents:
            raise LlmError("the chat answer has no choices: %s" % json.dumps(data)[:300])
        usage = data.get("usage") or {}
        return Completion(contents, usage.get("prompt_tokens"), usage.get("completion_tokens"))

    def cost_usd(self, completion):
        """What a completion cost at the configured prices; None without prices or token counts."""
        (p_in, p_out), (t_in, t_out) = self.usd_per_mtok, (completion.prompt_tokens, completion.completion_tokens)
        if p_in is None or p_out is None or t_in is None or t_out is None:
            return None
        return (t_in * p_in + t_out * p_out) / 1e6


def record_usage(store, client, completion):
    """Add a call's samples, tokens and cost to the run's total in the store (it survives a resume)."""
    u = store.meta(USAGE, {"calls": 0, "samples": 0, "prompt_tokens": 0, "completion_tokens": 0,
                           "unreported_calls": 0, "cost_usd": None, "model": client.model})
    u["calls"] += 1
    u["samples"] += len(completion.contents)
    if completion.prompt_tokens is None or completion.completion_tokens is None:
        u["unreported_calls"] += 1
    else:
        u["prompt_tokens"] += completion.prompt_tokens
        u["completion_tokens"] += completion.completion_tokens
    cost = client.cost_usd(completion)
    if cost is not None:
        u["cost_usd"] = (u["cost_usd"] or 0.0) + cost
    store.set_meta(USAGE, u)


class LlmAuthor:
    name = "llm"

    def __init__(self, client, task, population, primitives, measured, log=print):
        """population: the run's (authors/population.py); primitives: the compiler's op catalogue (the port's
        `primitives()`); measured: whether the run's times come from a GPU (else from the cost model)."""
        self.client = client
        self.task = task
        self.population = population
        self.system = prompt.system(grammar.grammar(), prompt.catalogue(primitives))
        self.timed = "measured on the GPU" if measured else "predicted by the cost model"
        self.log = log

    def _call(self, messages, samples=None):
        completion = self.client.chat(messages, samples)
        record_usage(self.population.store, self.client, completion)
        return completion.contents

    def propose(self, parent, ctx):
        messages = prompt.messages(self.task, parent, self.system, self.population.elites(prompt.ELITES),
                                   self.population.rejected(prompt.REJECTED), self.timed)
        try:
            answers = self._call(messages)
            kernels, errors = self._read(answers, parent)
            if not kernels and errors:
                first, error = errors[0]
                retry = messages + [{"role": "assistant", "content": first}, prompt.retry_message(error)]
                kernels, errors = self._read(self._call(retry, samples=1), parent)
        except LlmError as e:
            self.log("LLM author: no kernel (%s)" % e)
            return []
        if not kernels:
            self.log("LLM author: no kernel (%s)" % ("; ".join(str(e) for _, e in errors) or "no answer"))
        return [Proposal(k, None, "llm", self.name) for k in kernels]  # the loop drops and counts repeats

    @staticmethod
    def _read(answers, parent):
        """(kernels, [(answer, error)]) of a call's answers."""
        kernels, errors = [], []
        for answer in answers:
            try:
                kernels.append(prompt.parse_answer(answer, parent.ir_text))
            except (ParseError, diffs.DiffError) as e:
                errors.append((answer, e))
        return kernels, errors
