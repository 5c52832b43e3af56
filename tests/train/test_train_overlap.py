"""A GRPO rollout with overlap judges each group while the policy writes the next (train/multiturn.py): the groups
reach the judge in order and every verdict comes back to its own trajectory; a judge that is still working on group
1 when group 2 is written shows the two sides ran at once. (No timing thresholds: an event orders them, a timeout
only guards against a deadlock.)"""

import threading

import pytest

from kernelrl.train.multiturn import MultiTurnRollout, _Trajectory


class Scripted(MultiTurnRollout):
    """Attempts are the trajectory's spec; the judge returns (spec, text) pairs."""

    def __init__(self, overlap, group, judge):
        super().__init__(None, None, judge, None, turns=1, max_new_tokens=1, overlap=overlap, group=group)
        self.written = []

    def _attempt(self, model, t):
        self.written.append(t.spec)
        return f"kernel for {t.spec}"


def trajectories(n):
    return [_Trajectory("prompt", f"t{i}", [0]) for i in range(n)]


def test_overlapped_groups_are_judged_in_order_and_answer_their_own_trajectories():
    calls = []

    def judge(specs, texts, prompts):
        calls.append(list(specs))
        assert prompts == ["prompt"] * len(specs)  # each trajectory's own prompt: what a copy is checked against
        return list(zip(specs, texts))

    ts = trajectories(6)
    texts, results = Scripted(True, 2, judge)._turn(None, ts)
    assert calls == [["t0", "t1"], ["t2", "t3"], ["t4", "t5"]]
    assert results == [(t.spec, f"kernel for {t.spec}") for t in ts] and texts == [r[1] for r in results]


def test_without_overlap_one_batch_after_every_attempt():
    calls = []
    rollout = Scripted(False, 2, lambda specs, texts, prompts: calls.append(list(specs)) or [None] * len(specs))
    rollout._turn(None, trajectories(4))
    assert calls == [["t0", "t1", "t2", "t3"]]


def test_the_next_group_is_written_while_the_last_is_judged():
    judging, release = threading.Event(), threading.Event()
    seen_while_judging = []

    def judge(specs, texts, prompts):
        if specs[0] == "t0":
            judging.set()
            release.wait(timeout=30)  # held until group 2 has been written (or a deadlock guard)
        return [None] * len(specs)

    class Watching(Scripted):
        def _attempt(self, model, t):
            if t.spec == "t2":
                judging.wait(timeout=30)
                seen_while_judging.append(judging.is_set() and not release.is_set())
            if t.spec == "t3":
                release.set()
            return super()._attempt(model, t)

    rollout = Watching(True, 2, judge)
    rollout._turn(None, trajectories(4))
    assert seen_while_judging == [True]  # group 2 was being written while group 1 was still being judged
    fractions = rollout.busy_fractions()
    assert fractions["overlap"] is True and rollout.busy["judge_s"] > 0 and rollout.busy["generate_s"] > 0


def test_a_generation_error_ends_the_turn_with_that_error():

    class Failing(Scripted):
        def _attempt(self, model, t):
            if t.spec == "t2":
                raise RuntimeError("CUDA out of memory")
            return super()._attempt(model, t)

    with pytest.raises(RuntimeError, match="out of memory"):
        Failing(True, 2, lambda specs, texts, prompts: [None] * len(specs))._turn(None, trajectories(4))
