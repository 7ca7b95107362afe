"""The optional LLM author: an OpenAI-compatible chat endpoint writes the next kernel as IR text.

Off by default (`--author llm` or `mixed` turns it on). Configured from the
environment: OPENAI_BASE_URL (e.g. https://api.openai.com/v1), OPENAI_API_KEY and
CAKE_LLM_MODEL. It receives the parent's IR text, diagnostics and cost report
(authors/prompt.py) and answers with IR text; an answer that does not parse is sent
back once with the parse error. Plain urllib: no client library, no extra dependency.
"""

import json
import os
import urllib.error
import urllib.request

from compiler.ir.text import ParseError

from agent.authors import prompt
from agent.authors.base import Proposal


class LlmError(RuntimeError):
    """The endpoint could not be reached or answered with something other than a chat completion."""


class ChatClient:
    def __init__(self, base_url, api_key, model, timeout_s=120.0):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s

    @classmethod
    def from_env(cls, environ=None):
        env = os.environ if environ is None else environ
        missing = [k for k in ("OPENAI_BASE_URL", "CAKE_LLM_MODEL") if not env.get(k)]
        if missing:
            raise LlmError("the LLM author needs %s in the environment" % " and ".join(missing))
        return cls(env["OPENAI_BASE_URL"], env.get("OPENAI_API_KEY", ""), env["CAKE_LLM_MODEL"])

    def chat(self, messages):
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0.2}).encode()
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
            return data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LlmError("unexpected chat answer: %s" % json.dumps(data)[:300]) from None


class LlmAuthor:
    name = "llm"

    def __init__(self, client, task, log=print):
        self.client = client
        self.task = task
        self.log = log

    def propose(self, parent, ctx):
        messages = prompt.messages(self.task, parent)
        try:
            answer = self.client.chat(messages)
            try:
                kernel = prompt.parse_answer(answer)
            except ParseError as e:
                messages += [{"role": "assistant", "content": answer}, prompt.retry_message(e)]
                kernel = prompt.parse_answer(self.client.chat(messages))
        except (LlmError, ParseError) as e:
            self.log("LLM author: no kernel (%s)" % e)
            return []
        return [Proposal(kernel, None, "llm", self.name)]
