"""Multi-turn refinement in evolve (`turns`): each attempt's verdict is the next user message of the same
conversation, earlier replies condensed to their first paragraph and their code; the run records, per turn, the
attempts, the verified ones and the best speedup so far. A scripted server that reacts to the verdict stands in
for a model."""

import pytest

from kernelrl.evolve.loop import EvolveConfig
from tests.evolve_fake_server import BETTER, BROKEN, FIXED, FakeServer, answer, reply, scripted_run

LONG_ANALYSIS = "The tiles are too small for this GPU. " * 40  # a long first turn's reasoning


def reacting(body):
    """Turn 1: a kernel that does not compile; after a compile error: its fix; after a verified one: another."""
    last = body["messages"][-1]["content"]
    if "Turn " not in last:
        return reply(answer(BROKEN, analysis=LONG_ANALYSIS + "\n\nSecond paragraph of reasoning."))
    if "did not compile" in last:
        return reply(answer(FIXED, analysis="The brace was missing."))
    return reply(answer(BETTER, analysis="Keep the fix, try another variant."))


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))
    with FakeServer(reacting) as server:
        evolver, summary, target = scripted_run(server, tmp_path / "e.db", 3,
                                                EvolveConfig(islands=1, rng_seed=0, turns=3, generations=1))
    return server, summary, evolver, target


def test_turn_two_carries_the_verdict_of_turn_one(run):
    server, *_ = run
    second = server.requests[1]["messages"]
    assert "Turn 2 of 3" in second[-1]["content"] and "did not compile" in second[-1]["content"]
    assert second[-2]["role"] == "assistant" and "```cuda" in second[-2]["content"]
    assert "Second paragraph of reasoning" not in second[-2]["content"]  # earlier reasoning dropped
    assert len(second[-2]["content"].split("```")[0]) <= 620


def test_turn_three_carries_the_measurements_of_the_fixed_kernel(run):
    server, *_ = run
    third = server.requests[2]["messages"][-1]["content"]
    assert "Turn 3 of 3" in third and "- verified" in third and "speedup" in third


def test_each_turn_is_counted_with_the_best_so_far(run):
    _, summary, evolver, target = run
    assert [r["turn"] for r in summary.turns] == [1, 2, 3]
    assert [r["verified"] for r in summary.turns] == [0, 1, 1]
    assert summary.turns[0]["best_so_far"] is None
    assert summary.turns[2]["best_so_far"] >= summary.turns[1]["best_so_far"]
    refined = [c for c in evolver.pop.all(target.key) if c.origin == "refine"]
    assert len(refined) == 2 and all(c.parent is not None for c in refined)
