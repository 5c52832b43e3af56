"""Counting a prompt's tokens the way the model will, so that every request fits the model's context.

`make_counter(spec, ...)` picks how (LLMConfig.tokenizer):
- a path to a Hugging Face `tokenizer.json` (or a folder holding one): the model's own tokenizer, offline;
- `server`: the model server's own count (vLLM and SGLang answer `POST /tokenize` beside `/v1`);
- `chars:N` (default `chars:3`): a stated estimate of N characters per token. Code tokenizers give 3-4 characters
  per token on CUDA and Python; 3 errs on the long side, so an estimated prompt is rarely too long.

A chat request costs more than its messages' text: `message_tokens` adds MESSAGE_OVERHEAD tokens per message (the
role markers of a chat template) and REPLY_PRIMING for the assistant's opening, the figures of the common templates
(ChatML, Llama 3) rounded up."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from pathlib import Path
from typing import Protocol

from kernelrl.errors import UserError

MESSAGE_OVERHEAD = 8
REPLY_PRIMING = 4
DEFAULT_SPEC = "chars:3"


class TokenizerError(UserError, ValueError):
    """A tokenizer spec that cannot be used; one line says what to pass instead."""


class TokenCounter(Protocol):
    """What counts tokens: any of the counters below."""

    def count(self, text: str) -> int: ...

    def describe(self) -> str: ...


class CharEstimate:
    def __init__(self, chars_per_token: float):
        if not chars_per_token > 0:
            raise TokenizerError(f"tokenizer chars:{chars_per_token}: characters per token must be positive")
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def describe(self) -> str:
        return f"an estimate of {self.chars_per_token:g} characters per token"


class HFTokenizer:
    def __init__(self, path: Path):
        from tokenizers import Tokenizer  # the Hugging Face tokenizers package (kernelrl[rl], or transformers)

        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise TokenizerError(f"tokenizer {path}: no tokenizer.json there; pass the file or the model folder "
                                 f"holding it, 'server', or chars:N")
        try:
            self.tok = Tokenizer.from_file(str(file))
        except Exception as exc:
            raise TokenizerError(f"tokenizer {file}: not a Hugging Face tokenizer.json ({exc})") from None
        self.file = file

    def count(self, text: str) -> int:
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def describe(self) -> str:
        return f"the tokenizer in {self.file}"


class ServerTokenizer:
    """vLLM's and SGLang's `POST /tokenize` (at the server's root, beside /v1): {"model", "prompt"} -> {"count"}."""

    def __init__(self, base_url: str, model, timeout_s: float = 30.0):
        root = base_url.rstrip("/")
        self.url = (root[:-3] if root.endswith("/v1") else root) + "/tokenize"
        self.model = model if callable(model) else (lambda: model)  # the served name, once it is known
        self.timeout_s = timeout_s

    def count(self, text: str) -> int:
        body = json.dumps({"model": self.model(), "prompt": text, "add_special_tokens": False}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise TokenizerError(f"tokenizer server: {self.url} did not count tokens ({exc}); use the model's "
                                 f"tokenizer.json or chars:N instead") from None
        if "count" in answer:
            return int(answer["count"])
        if "tokens" in answer:
            return len(answer["tokens"])
        raise TokenizerError(f"tokenizer server: {self.url} answered without a count; use a tokenizer.json or "
                             f"chars:N")

    def describe(self) -> str:
        return f"the server's count ({self.url})"


class ChatTemplateCounter:
    """A loaded transformers tokenizer (the policy's, in training): text by the tokenizer, and a whole request
    exactly, through its own chat template where it has one."""

    def __init__(self, tokenizer):
        self.tok = tokenizer

    def count(self, text: str) -> int:
        return len(self.tok(text, add_special_tokens=False)["input_ids"])

    def count_messages(self, messages: list[dict]) -> int | None:
        if not getattr(self.tok, "chat_template", None):
            return None
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding (a mapping, not a dict)
            ids = ids["input_ids"]
        return len(ids)

    def describe(self) -> str:
        return f"the policy's tokenizer ({getattr(self.tok, 'name_or_path', '') or 'loaded'})"


def make_counter(spec: str | None, base_url: str = "", model=""):
    spec = spec or DEFAULT_SPEC
    if spec == "server":
        return ServerTokenizer(base_url, model)
    if spec.startswith("chars:"):
        try:
            return CharEstimate(float(spec.split(":", 1)[1]))
        except ValueError:
            raise TokenizerError(f"tokenizer {spec}: expected chars:N with N characters per token, e.g. chars:3") \
                from None
    return HFTokenizer(Path(spec))


def message_tokens(messages: list[dict], counter) -> int:
    """Tokens of a chat request's messages: exactly, where the counter knows the chat template; else their text by
    `counter`, plus each message's template markers and the reply's opening."""
    exact = counter.count_messages(messages) if hasattr(counter, "count_messages") else None
    if exact is not None:
        return exact
    return sum(counter.count(m.get("content") or "") + MESSAGE_OVERHEAD for m in messages) + REPLY_PRIMING
