"""The reward service: extraction and repeats in the training process; batches per target; evaluation in spawned
processes with deadlines (a hang costs one candidate a `timeout` verdict, not the batch), retries after a dead or
failing worker, and the real judge (dummy runner) end to end."""

import pytest

from kernelrl.train.reward import RewardConfig
from kernelrl.train.service import EvalSettings, EvalSettingsError, RewardService, worker_place
from kernelrl.train.targets import TargetSpec
from tests import train_helpers as h

SPEC = TargetSpec("hgemm", ("torch",), None, 1, 30.0, "", shapes=("64x64x64",), runner="dummy").to_json()
SPEC_2 = TargetSpec("hgemm", ("torch",), None, 1, 30.0, "", shapes=("128x128x128",), runner="dummy").to_json()


def service(judge=h.ok_judge, answers=None, **settings):
    ex = h.InlineExecutor(judge, answers)
    return RewardService(EvalSettings(**settings), RewardConfig(smoothing="none", length_weight=0.0),
                         executor=ex), ex


def test_a_reply_without_code_is_malformed_and_never_sent_to_a_worker():
    svc, ex = service()
    [r] = svc.score([(SPEC, "I would tile it by 128.")])
    assert r.category == "malformed" and r.reward == 0.0 and ex.batches == []


def test_verified_code_gets_its_speedup_as_reward():
    svc, _ = service()
    [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert r.ok and r.reward == pytest.approx(2.0)


def test_completions_of_one_target_share_one_batch():
    svc, ex = service()
    svc.score([(SPEC, h.fenced(h.KERNEL)), (SPEC, h.fenced(h.KERNEL_2)), (SPEC_2, h.fenced(h.KERNEL))])
    assert sorted(len(b.codes) for b in ex.batches) == [1, 2]


def test_batches_hold_at_most_batch_size_candidates():
    svc, ex = service(batch_size=1)
    svc.score([(SPEC, h.fenced(h.KERNEL)), (SPEC, h.fenced(h.KERNEL_2))])
    assert [len(b.codes) for b in ex.batches] == [1, 1]


def test_the_same_code_in_one_call_is_evaluated_once():
    svc, ex = service()
    results = svc.score([(SPEC, h.fenced(h.KERNEL, analysis="a")), (SPEC, h.fenced(h.KERNEL, analysis="b"))])
    assert [len(b.codes) for b in ex.batches] == [1] and [r.reward for r in results] == [2.0, 2.0]


def test_a_repeat_in_a_later_call_comes_from_the_cache():
    svc, ex = service()
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert len(ex.batches) == 1 and svc.stats["cached"] == 1


def test_the_cache_can_be_switched_off():
    svc, ex = service(cache=False)
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert len(ex.batches) == 2


def test_a_failing_evaluation_is_retried():
    svc, ex = service(answers=[{"error": "RuntimeError: transient"}], retries=1)
    [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert r.ok and len(ex.batches) == 2 and svc.stats["retries"] == 1


def test_an_evaluation_failing_past_its_retries_is_an_error_worth_zero():
    svc, ex = service(judge=h.failing_judge, retries=2)
    [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert (r.category, r.reward) == ("error", 0.0) and "3 attempts" in r.verdict and len(ex.batches) == 3


def test_an_error_is_not_cached():
    svc, ex = service(answers=[{"error": "x"}], retries=0)
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert r.ok and len(ex.batches) == 2


@pytest.mark.parametrize("bad", [dict(workers=0), dict(batch_size=0), dict(retries=-1), dict(timeout_s=0),
                                 dict(workers=2, gpus=[3])])
def test_evaluation_settings_that_cannot_work_are_refused(bad):
    with pytest.raises(EvalSettingsError):
        EvalSettings(**bad)


# -- real spawned processes ------------------------------------------------------------------------------------
def test_a_hanging_candidate_times_out_alone_and_the_others_are_scored():
    svc = RewardService(EvalSettings(timeout_s=3.0, batch_size=8), judge_fn=h.hang_if_marked_judge)
    try:
        hang = h.KERNEL.replace("naive<<<", "/* HANG */ naive<<<")
        results = svc.score([(SPEC, h.fenced(h.KERNEL)), (SPEC, h.fenced(hang)), (SPEC, h.fenced(h.KERNEL_2))])
    finally:
        svc.close()
    assert [r.category for r in results] == ["ok", "timeout", "ok"]
    assert results[1].reward == 0.0 and "3 s" in results[1].verdict


def test_a_local_worker_sees_only_the_gpu_it_is_given():
    svc = RewardService(EvalSettings(gpus=[5]), judge_fn=h.env_judge)
    try:
        [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    finally:
        svc.close()
    assert r.verdict == "gpu 5"


def test_each_answered_batch_is_counted_by_where_it_ran():
    placed = {"ok": h.ok_judge(SPEC, {"k": "x"})["ok"], "where": "node-a:gpu1"}
    svc, ex = service(answers=[placed])
    svc.score([(SPEC, h.fenced(h.KERNEL))])
    assert svc.stats["on node-a:gpu1"] == 1


def test_a_worker_names_its_host_and_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert worker_place().endswith(":gpu3")


def test_a_worker_that_dies_is_retried_then_given_up():
    svc = RewardService(EvalSettings(timeout_s=30.0, retries=1), judge_fn=h.dying_judge)
    try:
        [r] = svc.score([(SPEC, h.fenced(h.KERNEL))])
    finally:
        svc.close()
    assert r.category == "error" and "died" in r.verdict and svc.stats["lost"] == 2


def test_the_real_judge_in_a_worker_process_scores_each_verdict(tmp_path):
    spec = TargetSpec("hgemm", ("torch",), None, 1, 30.0, str(tmp_path), shapes=("64x64x64", "128x128x128"),
                      runner="dummy").to_json()
    svc = RewardService(EvalSettings(timeout_s=120.0))
    try:
        results = svc.score([(spec, h.fenced(h.KERNEL)), (spec, h.fenced(h.CHEAT)), (spec, h.fenced(h.NO_ENTRY)),
                             (spec, "no code here")])
    finally:
        svc.close()
    assert [r.category for r in results] == ["ok", "rejected", "compile", "malformed"]
    assert results[0].reward > 0.5 and results[1].hack and (tmp_path / "rewards.db").exists()


def test_evaluation_over_ray_tasks(tmp_path):
    ray = pytest.importorskip("ray")
    spec = TargetSpec("hgemm", ("torch",), None, 1, 30.0, str(tmp_path), shapes=("64x64x64",),
                      runner="dummy").to_json()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        svc = RewardService(EvalSettings(ray_address="local", gpus_per_worker=0, workers=2, timeout_s=120.0))
        results = svc.score([(spec, h.fenced(h.KERNEL)), (spec, h.fenced(h.CHEAT))])
    finally:
        ray.shutdown()
    assert [r.category for r in results] == ["ok", "rejected"]
