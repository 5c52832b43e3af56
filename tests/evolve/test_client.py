"""The OpenAI-compatible client against a scripted loopback server: answers, retries with backoff, final
errors, budgets, concurrency, the usage log, and where its settings come from."""

import json

import pytest

from tests.evolve_fake_server import GOOD, FakeServer, answer, error, reply
from kernelrl.evolve.budget import Budget
from kernelrl.evolve.client import LLMClient, LLMConfig, LLMError
from kernelrl.evolve.usage import UsageLog, read_usage, totals

MESSAGES = [{"role": "user", "content": "write a kernel"}]


def client_for(server, tmp_path, budget=None, waits=None, **cfg):
    cfg = LLMConfig(base_url=server.url, model=cfg.pop("model", "scripted-model"),
                    **{"backoff_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0, **cfg})
    sleep = waits.append if waits is not None else (lambda s: None)
    return LLMClient(cfg, budget or Budget(), UsageLog(tmp_path / "usage.jsonl"), sleep=sleep)


def outcomes(tmp_path):
    return [r["outcome"] for r in read_usage(tmp_path / "usage.jsonl") if r["kind"] == "call"]


def test_a_reply_comes_back_with_its_usage(tmp_path):
    with FakeServer([reply(answer(GOOD))]) as server:
        result = client_for(server, tmp_path).complete(MESSAGES)
    assert result.ok and "kernelrl_hgemm" in result.text
    assert result.prompt_tokens > 0 and result.completion_tokens > 0 and result.attempts == 1


def test_the_request_carries_model_messages_and_sampling(tmp_path):
    with FakeServer([reply("hi")]) as server:
        client_for(server, tmp_path, temperature=0.3, top_p=0.5, max_tokens=123, seed=7).complete(MESSAGES)
    body = server.requests[0]
    assert (body["model"], body["messages"], body["temperature"], body["top_p"], body["max_tokens"]) == \
        ("scripted-model", MESSAGES, 0.3, 0.5, 123)
    assert "seed" in body


def test_a_500_is_retried_and_then_succeeds(tmp_path):
    with FakeServer([error(500), reply("fine")]) as server:
        result = client_for(server, tmp_path).complete(MESSAGES)
    assert result.ok and result.text == "fine" and result.attempts == 2
    assert outcomes(tmp_path) == ["http_500", "ok"]


def test_a_timeout_is_retried_and_then_succeeds(tmp_path):
    # The first answer comes long after the client's timeout: the client gives up on it and asks again.
    with FakeServer([reply("late", delay_s=2.0), reply("on time")]) as server:
        result = client_for(server, tmp_path, timeout_s=0.3).complete(MESSAGES)
    assert result.ok and result.text == "on time"
    assert outcomes(tmp_path) == ["timeout", "ok"]


def test_an_empty_reply_is_asked_again(tmp_path):
    with FakeServer([reply(""), reply("fine")]) as server:
        result = client_for(server, tmp_path).complete(MESSAGES)
    assert result.ok and result.text == "fine" and outcomes(tmp_path) == ["empty", "ok"]


def test_a_reply_cut_off_by_max_tokens_is_the_models_and_not_asked_again(tmp_path):
    with FakeServer([reply("", finish_reason="length"), reply("never sent")]) as server:
        result = client_for(server, tmp_path).complete(MESSAGES)
    assert result.ok and result.text == "" and result.finish_reason == "length" and len(server.requests) == 1


def test_retry_waits_double_each_time(tmp_path):
    waits = []
    with FakeServer([error(503), error(502), error(500), reply("ok")]) as server:
        result = client_for(server, tmp_path, waits=waits, backoff_s=1.0, backoff_max_s=100.0).complete(MESSAGES)
    assert result.ok and len(waits) == 3
    for attempt, wait in enumerate(waits):  # jitter keeps each wait within [½, 1] × backoff_s · 2^attempt
        assert 0.5 * 2 ** attempt <= wait <= 2 ** attempt


def test_a_429_waits_as_long_as_retry_after_says(tmp_path):
    waits = []
    with FakeServer([error(429, "slow down", retry_after=0.02), reply("ok")]) as server:
        result = client_for(server, tmp_path, waits=waits).complete(MESSAGES)
    assert result.ok and waits == [0.02]
    assert outcomes(tmp_path) == ["rate_limited", "ok"]


def test_a_client_error_is_final_with_the_servers_message(tmp_path):
    with FakeServer([error(404, "The model `nope` does not exist."), reply("never sent")]) as server:
        result = client_for(server, tmp_path, model="nope").complete(MESSAGES)
    assert not result.ok and result.outcome == "http_404" and result.attempts == 1
    assert "does not exist" in result.error and len(server.requests) == 1


def test_retries_stop_after_the_configured_number(tmp_path):
    with FakeServer([error(500)] * 5) as server:
        result = client_for(server, tmp_path, retries=2).complete(MESSAGES)
    assert not result.ok and result.attempts == 3 and len(server.requests) == 3


def test_the_call_budget_refuses_further_calls(tmp_path):
    with FakeServer([reply("a"), reply("b"), reply("c")]) as server:
        client = client_for(server, tmp_path, budget=Budget(max_calls=2))
        results = [client.complete(MESSAGES) for _ in range(3)]
    assert [r.outcome for r in results] == ["ok", "ok", "budget"]
    assert len(server.requests) == 2 and "call budget" in results[2].error


def test_the_token_budget_refuses_calls_once_spent(tmp_path):
    with FakeServer([reply(answer(GOOD)), reply("b")]) as server:
        client = client_for(server, tmp_path, budget=Budget(max_tokens=10))
        first, second = client.complete(MESSAGES), client.complete(MESSAGES)
    assert first.ok and second.outcome == "budget" and "token budget" in second.error
    assert len(server.requests) == 1


def test_concurrency_never_exceeds_the_limit(tmp_path):
    with FakeServer(lambda body: reply("ok", delay_s=0.2)) as server:
        client = client_for(server, tmp_path, concurrency=2)
        results = client.complete_many([(MESSAGES, "propose", {"i": i}) for i in range(6)])
    assert all(r.ok for r in results) and [r.meta["i"] for r in results] == list(range(6))
    assert server.max_in_flight <= 2


def test_the_usage_log_records_model_tokens_latency_and_outcome(tmp_path):
    with FakeServer([error(500), reply("ok")]) as server:
        client_for(server, tmp_path).complete(MESSAGES, purpose="repair", meta={"island": 3})
    records = read_usage(tmp_path / "usage.jsonl")
    ok = records[-1]
    assert ok["model"] == "scripted-model" and ok["purpose"] == "repair" and ok["island"] == 3
    assert ok["prompt_tokens"] > 0 and ok["completion_tokens"] > 0 and ok["latency_s"] >= 0
    assert totals(records)["failures"] == {"http_500": 1} and totals(records)["ok"] == 1


def test_the_only_served_model_is_used_when_none_is_given(tmp_path):
    with FakeServer([], models=["org/coder-32b"]) as server:
        assert client_for(server, tmp_path, model="").resolve_model() == "org/coder-32b"


def test_no_model_and_several_served_is_one_clear_error(tmp_path):
    with FakeServer([], models=["a", "b"]) as server:
        with pytest.raises(LLMError, match="serves 2 models"):
            client_for(server, tmp_path, model="").resolve_model()


def test_settings_come_from_env_then_file_then_command_line(tmp_path):
    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"model": "from-file", "temperature": 0.2, "extra_body": {"top_k": 20}}))
    env = {"KERNELRL_LLM_BASE_URL": "http://gpu:8000/v1", "KERNELRL_LLM_MODEL": "from-env", "OPENAI_API_KEY": "k"}
    cfg = LLMConfig.resolve({"temperature": 0.9, "model": None}, path, env=env)
    assert (cfg.base_url, cfg.model, cfg.api_key, cfg.temperature, cfg.extra_body) == \
        ("http://gpu:8000/v1", "from-file", "k", 0.9, {"top_k": 20})
    assert "api_key" not in cfg.public()


def test_an_unknown_config_key_is_named(tmp_path):
    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"temprature": 0.2}))
    with pytest.raises(LLMError, match="unknown key temprature"):
        LLMConfig.resolve({}, path, env={})
