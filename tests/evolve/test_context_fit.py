"""Prompts fitted to a model's context in its own tokens (evolve/tokens.py, prompts.ContextFit): with a real
Hugging Face tokenizer.json (a byte-level BPE of a code model's format, trained here on the project's kernels) and
the project's small byte tokenizer, a long task with many earlier variants is trimmed to fit a 32 k context in a
stated order and says what it left out; a task that cannot fit even alone is refused with one line before any
request; a request asks for no more than its prompt leaves."""

from pathlib import Path

import pytest

from kernelrl.evolve.client import LLMConfig, LLMError
from kernelrl.evolve.hgemm_target import HgemmTarget
from kernelrl.evolve.population import Population
from kernelrl.evolve.prompts import ContextFit, PromptBuilder, PromptTooLong, strip_comments
from kernelrl.evolve.tokens import CharEstimate, HFTokenizer, TokenizerError, make_counter, message_tokens
from kernelrl.workloads.hgemm import parse_shapes
from tests.evolve_fake_server import GOOD

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def code_tokenizer(tmp_path_factory):
    """A byte-level BPE tokenizer.json (the format of StarCoder's, Qwen's, DeepSeek-Coder's), trained offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [p.read_text(errors="replace") for p in sorted((ROOT / "kernelrl").rglob("*.cu*"))][:40]
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=2000, show_progress=False,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def byte_tokenizer(tmp_path_factory):
    """The project's small tokenizer (kernelrl.train.tiny), saved as a model folder."""
    from kernelrl.train.tiny import byte_tokenizer as make
    folder = tmp_path_factory.mktemp("tiny")
    make().save_pretrained(folder)
    return folder


@pytest.fixture
def target(tmp_path):
    return HgemmTarget(parse_shapes("4096x4096x4096"), tmp_path / "e.db", ["torch"], runner="dummy")


@pytest.fixture
def variants(target, tmp_path):
    """A parent and eleven other verified variants of the full GOOD kernel (about 2.5 k tokens each)."""
    pop = Population(tmp_path / "e.db")
    out = []
    for i in range(12):
        c, _ = pop.add(target.key, GOOD + f"\n// variant {i}: tile tweak\n", "llm", 1, island=0)
        detail = {"4096x4096x4096": {"us": 800.0 - i, "baselines": {"torch": 800.0}}}
        out.append(pop.record(c.id, "ok", None, 1.0 + i / 100, {"torch": 1.0 + i / 100}, detail))
    yield out
    pop.close()


def fitted(target, tokenizer_path, context=32768, max_new=8192):
    return PromptBuilder(target, "- GPU: test", fit=ContextFit(HFTokenizer(tokenizer_path), context, max_new))


@pytest.mark.parametrize("which", ["code_tokenizer", "byte_tokenizer"])
def test_a_long_prompt_is_trimmed_to_fit_a_32k_context(request, target, variants, which):
    tok = request.getfixturevalue(which)
    builder = fitted(target, tok)
    parent, others = variants[-1], variants[:-1]
    messages = builder.propose(parent, others, [])
    report = builder.last_fit
    assert report.tokens <= 32768 - 8192 and report.dropped  # it had to leave something out
    assert message_tokens(messages, HFTokenizer(tok)) == report.tokens
    user = messages[1]["content"]
    assert GOOD.split("\n")[5] in user and "variant 11" in user  # the parent in full
    assert "(left out to fit the model's context:" in user
    assert "source" in report.dropped[0] and report.dropped[0].startswith(variants[0].name)  # the worst goes first


def test_a_prompt_that_fits_is_left_whole(target, variants, code_tokenizer):
    builder = fitted(target, code_tokenizer, context=1_000_000, max_new=8192)
    messages = builder.propose(variants[-1], variants[:3], [])
    assert builder.last_fit.dropped == [] and "left out" not in messages[1]["content"]


def test_a_task_that_cannot_fit_alone_is_one_line_before_any_request(target, code_tokenizer):
    builder = fitted(target, code_tokenizer, context=8192 + 200, max_new=8192)
    with pytest.raises(PromptTooLong, match="with nothing but the task in it") as err:
        builder.check_fits()
    assert "\n" not in str(err.value)


def test_a_request_asks_for_no_more_than_its_prompt_leaves():
    fit = ContextFit(CharEstimate(3), context_tokens=32768, max_new_tokens=8192)
    assert fit.new_tokens(10_000) == 8192 and fit.new_tokens(30_000) == 32768 - 30_000 - ContextFit.SAFETY


def test_a_context_no_larger_than_max_tokens_is_refused():
    with pytest.raises(LLMError, match="leaves no room for a prompt"):
        LLMConfig(context_tokens=8192, max_tokens=8192).validate()


def test_tokenizer_specs_are_checked_with_one_line(tmp_path):
    assert isinstance(make_counter("chars:3.5"), CharEstimate)
    with pytest.raises(TokenizerError, match="no tokenizer.json there"):
        make_counter(str(tmp_path))
    with pytest.raises(TokenizerError, match="expected chars:N"):
        make_counter("chars:many")


def test_comment_stripping_keeps_code_and_strings():
    assert strip_comments("int x = 1; // one\n/* block\n */\n\nint y;\n", "cuda") == "int x = 1;\nint y;\n"
    assert strip_comments("x = '#not a comment'  # a comment\n\n", "python").rstrip() == "x = '#not a comment'"


def test_a_request_refused_for_its_length_is_retried_with_the_room_the_server_counted():
    from kernelrl.evolve.budget import Budget
    from kernelrl.evolve.client import LLMClient
    from tests.evolve_fake_server import FakeServer, answer, error, reply
    refusal = ("This model's maximum context length is 32768 tokens. However, you requested 34000 tokens (26000 in "
               "the messages, 8000 in the completion). Please reduce the length of the messages or completion.")
    with FakeServer([error(400, refusal), reply(answer(GOOD))]) as server:
        client = LLMClient(LLMConfig(base_url=server.url, model="scripted-model", max_tokens=8000, backoff_s=0.01),
                           Budget(max_calls=1))
        done = client.complete([{"role": "user", "content": "write a kernel"}])
    assert done.ok and [r["max_tokens"] for r in server.requests] == [8000, 32768 - 26000 - 16]


def test_a_refusal_that_leaves_no_room_for_a_kernel_is_final():
    from kernelrl.evolve.budget import Budget
    from kernelrl.evolve.client import LLMClient
    from tests.evolve_fake_server import FakeServer, error
    refusal = "maximum context length is 32768 tokens. However, you requested 40000 tokens (32500 in the messages"
    with FakeServer([error(400, refusal)]) as server:
        done = LLMClient(LLMConfig(base_url=server.url, model="scripted-model", backoff_s=0.01),
                         Budget(max_calls=1)).complete([{"role": "user", "content": "x"}])
    assert not done.ok and "maximum context length" in done.error and len(server.requests) == 1


def test_the_servers_own_count_is_asked_at_its_tokenize_route():
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from kernelrl.evolve.tokens import ServerTokenizer
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = _json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            asked.append((self.path, body["model"]))
            payload = _json.dumps({"count": len(body["prompt"].split())}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        counter = ServerTokenizer(f"http://127.0.0.1:{server.server_port}/v1", lambda: "served-model")
        assert counter.count("three little words") == 3
    finally:
        server.shutdown()
    assert asked == [("/tokenize", "served-model")]


def test_a_server_without_a_tokenize_route_is_one_line():
    from kernelrl.evolve.tokens import ServerTokenizer
    with pytest.raises(TokenizerError, match="did not count tokens"):
        ServerTokenizer("http://127.0.0.1:9/v1", "m", timeout_s=1.0).count("x")
