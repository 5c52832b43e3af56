"""The population database (resumable, islands, migration) and who is drawn into a prompt."""

import random

import pytest

from kernelrl.evolve.population import Population
from kernelrl.evolve.sampling import pick_inspirations, pick_negatives, pick_parent

T = "hgemm:fp32:1:test"


@pytest.fixture
def pop(tmp_path):
    p = Population(tmp_path / "evolve.db")
    yield p
    p.close()


def ok(pop, source, score, island=0, generation=0):
    c, _ = pop.add(T, source, "llm", generation, island=island)
    return pop.record(c.id, "ok", None, score, {"torch": score}, {"64x64x64": {"us": 1.0, "baselines": {}}})


def failed(pop, source, category, verdict, island=0):
    c, _ = pop.add(T, source, "llm", 0, island=island)
    return pop.record(c.id, category, verdict)


def test_a_repeated_source_is_not_added_twice(pop):
    first, new1 = pop.add(T, "k1", "llm", 0, island=0)
    again, new2 = pop.add(T, "k1", "llm", 3, island=1)
    assert (new1, new2) == (True, False) and again.id == first.id


def test_new_candidates_are_pending_until_recorded(pop):
    c, _ = pop.add(T, "k1", "llm", 0, island=0)
    assert [p.id for p in pop.pending(T)] == [c.id]
    pop.record(c.id, "compile", "compile error: x")
    assert pop.pending(T) == []


def test_everything_survives_reopening(tmp_path):
    p = Population(tmp_path / "e.db")
    c = ok(p, "k1", 1.3)
    p.set_state(T, "generation", 7)
    p.close()
    again = Population(tmp_path / "e.db")
    assert again.generation(T) == 7 and again.best(T)[0].id == c.id and again.best(T)[0].speedups == {"torch": 1.3}
    again.close()


def test_best_is_fastest_first(pop):
    slow, fast = ok(pop, "a", 0.9), ok(pop, "b", 1.4)
    failed(pop, "c", "wrong", "wrong values")
    assert [c.id for c in pop.best(T)] == [fast.id, slow.id]


def test_seeds_are_members_of_every_island(pop):
    seed, _ = pop.add(T, "seed", "seed", 0)
    pop.record(seed.id, "ok", None, 1.0)
    mine = ok(pop, "mine", 1.1, island=1)
    assert [c.id for c in pop.members(T, 0)] == [seed.id]
    assert [c.id for c in pop.members(T, 1)] == [seed.id, mine.id]


def test_migration_moves_each_islands_best_to_the_next(pop):
    a0, b0 = ok(pop, "a", 1.1, island=0), ok(pop, "b", 1.5, island=0)
    c1 = ok(pop, "c", 1.2, island=1)
    moves = pop.migrate(T, 2, generation=3)
    assert {(src, dst, c.id) for src, dst, c in moves} == {(0, 1, b0.id), (1, 0, c1.id)}
    assert {c.id for c in pop.members(T, 1)} == {b0.id, c1.id} and a0.id not in {c.id for c in pop.members(T, 1)}


def test_migration_does_not_repeat_a_move(pop):
    ok(pop, "a", 1.1, island=0)
    pop.migrate(T, 2, generation=3)
    assert pop.migrate(T, 2, generation=6) == []


def test_counts_by_category(pop):
    ok(pop, "a", 1.0)
    failed(pop, "b", "compile", "compile error")
    pop.add(T, "c", "llm", 0, island=0)
    assert pop.counts(T) == {"ok": 1, "compile": 1, "pending": 1}


def test_better_parents_are_drawn_more_often(pop):
    cands = [ok(pop, f"k{i}", 1.0 + i / 10) for i in range(4)]
    rng = random.Random(0)
    draws = [pick_parent(cands, rng, explore=0.0).id for _ in range(2000)]
    counts = [draws.count(c.id) for c in cands]
    assert counts[3] > counts[2] > counts[1] > counts[0] > 0


def test_no_verified_candidate_means_no_parent(pop):
    assert pick_parent([failed(pop, "x", "wrong", "wrong values")], random.Random(0)) is None


def test_inspirations_exclude_the_parent_and_bring_in_another_island(pop):
    island0 = [ok(pop, f"i{i}", 1.0 + i / 10) for i in range(4)]
    elsewhere = ok(pop, "other", 1.05, island=1)
    parent = island0[-1]
    chosen = pick_inspirations(parent, island0, island0 + [elsewhere], 3, random.Random(0))
    assert parent not in chosen and elsewhere.id in {c.id for c in chosen} and len(chosen) == 3
    assert [c.score for c in chosen] == sorted((c.score for c in chosen), reverse=True)


def test_inspirations_include_a_slower_one_for_contrast(pop):
    island0 = [ok(pop, f"i{i}", 1.0 + i / 10) for i in range(6)]
    chosen = pick_inspirations(island0[-1], island0, island0, 3, random.Random(1))
    assert min(c.score for c in chosen) <= 1.2


def test_negatives_cover_each_verdict_kind_first(pop):
    a = failed(pop, "a", "compile", "compile error: 1")
    b = failed(pop, "b", "compile", "compile error: 2")
    c = failed(pop, "c", "rejected", "static screen: cuda-stream")
    d = failed(pop, "d", "defence", "during timing: wrong values")
    chosen = pick_negatives([a, b, c, d], 3)
    assert {x.category for x in chosen} == {"compile", "rejected", "defence"} and chosen[-1].id == b.id


def test_replies_without_code_are_negatives_only_when_nothing_else_failed(pop):
    m = failed(pop, "reply", "malformed", "malformed: empty reply")
    w = failed(pop, "w", "wrong", "wrong values")
    assert pick_negatives([m, w], 2) == [w] and pick_negatives([m], 2) == [m]
