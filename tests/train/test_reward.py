"""The reward of one judged completion: speedup aggregation, clipping and smoothing, the transform, the zero for
failures and cheats, and the error and length penalties. Pure functions: no evaluator, no TRL."""

import math

import pytest

from kernelrl.train.reward import (Judgement, RewardConfig, RewardConfigError, clip, compute_reward,
                                   error_penalty, length_penalty)

FP32_TOL = 8 * 2.0 ** -11


def judged(*speedups, baseline="torch", err=0.0, tol=FP32_TOL, chars=1000, category="ok", verdict=None):
    """A Judgement with one shape per speedup (candidate 100 µs, the baseline 100·s µs)."""
    shapes = {f"{64 * (i + 1)}x64x64": {"us": 100.0, "baselines": {baseline: 100.0 * s}, "max_rel_err": err,
                                        "tolerance": tol} for i, s in enumerate(speedups)}
    return Judgement(category, verdict, "torch", shapes, code_chars=chars)


PLAIN = dict(smoothing="none", error_weight=0.0, length_weight=0.0)


def test_the_reward_is_the_mean_speedup_over_shapes():
    assert compute_reward(judged(1.0, 2.0), RewardConfig(**PLAIN)).reward == pytest.approx(1.5)


def test_geomean_aggregation_is_an_option():
    r = compute_reward(judged(1.0, 4.0), RewardConfig(aggregate="geomean", **PLAIN))
    assert r.reward == pytest.approx(2.0)


def test_the_raw_speedup_is_reported_before_clipping():
    r = compute_reward(judged(100.0), RewardConfig(**PLAIN))
    assert r.speedup == pytest.approx(100.0) and r.reward == pytest.approx(8.0)


def test_each_shape_is_clipped_before_averaging():
    # one outlier shape cannot dominate: 1× and 100× average as 1× and 8×
    assert compute_reward(judged(1.0, 100.0), RewardConfig(**PLAIN)).reward == pytest.approx(4.5)


def test_a_slow_kernel_is_clipped_at_the_lower_bound():
    assert compute_reward(judged(0.01), RewardConfig(**PLAIN)).reward == pytest.approx(0.125)


@pytest.mark.parametrize("s", [0.01, 0.3, 1.0, 2.0, 50.0])
def test_tanh_smoothing_stays_inside_the_clip_range(s):
    cfg = RewardConfig(smoothing="tanh")
    assert cfg.clip_min < clip(s, cfg) < cfg.clip_max


def test_tanh_smoothing_keeps_one_at_one_for_a_symmetric_range():
    assert clip(1.0, RewardConfig(smoothing="tanh", clip_min=0.25, clip_max=4.0)) == pytest.approx(1.0)


def test_tanh_smoothing_is_monotone():
    cfg = RewardConfig(smoothing="tanh")
    values = [clip(s, cfg) for s in (0.1, 0.5, 1.0, 1.5, 3.0, 20.0)]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_tanh_smoothing_is_close_to_identity_near_one():
    assert clip(1.2, RewardConfig(smoothing="tanh")) == pytest.approx(1.2, rel=0.02)


def test_log_transform_equals_linear_at_one():
    cfg = RewardConfig(transform="log", **PLAIN)
    assert compute_reward(judged(1.0), cfg).reward == pytest.approx(1.0)


def test_log_transform_compresses_large_speedups():
    cfg = RewardConfig(transform="log", **PLAIN)
    assert compute_reward(judged(4.0), cfg).reward == pytest.approx(1 + math.log(4.0))


@pytest.mark.parametrize("category", ["malformed", "compile", "wrong", "crash", "failed", "timeout", "error"])
def test_a_failure_is_worth_zero(category):
    assert compute_reward(judged(category=category, verdict="x"), RewardConfig()).reward == 0.0


@pytest.mark.parametrize("category", ["rejected", "defence"])
def test_a_cheat_is_worth_zero_and_counts_as_a_hack(category):
    r = compute_reward(judged(3.0, category=category, verdict="hidden work"), RewardConfig())
    assert r.reward == 0.0 and r.hack


def test_a_failure_keeps_its_verdict():
    r = compute_reward(judged(category="wrong", verdict="wrong values: error 1"), RewardConfig())
    assert (r.category, r.verdict) == ("wrong", "wrong values: error 1")


def test_a_verified_kernel_without_the_baseline_time_is_a_failure():
    r = compute_reward(judged(2.0, baseline="cublas_tn"), RewardConfig(**PLAIN))
    assert r.reward == 0.0 and r.category == "failed" and "torch" in r.verdict


def test_the_chosen_baseline_overrides_the_targets_objective():
    r = compute_reward(judged(2.0, baseline="cublas_tn"), RewardConfig(baseline="cublas_tn", **PLAIN))
    assert r.reward == pytest.approx(2.0)


def test_the_error_penalty_grows_with_the_error_relative_to_the_tolerance():
    cfg = RewardConfig(error_weight=0.2)
    assert error_penalty(judged(1.0, err=FP32_TOL / 2), cfg) == pytest.approx(0.1)


def test_the_error_penalty_is_capped_at_its_weight():
    assert error_penalty(judged(1.0, err=FP32_TOL * 10), RewardConfig(error_weight=0.2)) == pytest.approx(0.2)


def test_the_error_penalty_takes_the_worst_shape():
    j = judged(1.0, 1.0, err=0.0)
    j.shapes["128x64x64"]["max_rel_err"] = FP32_TOL
    assert error_penalty(j, RewardConfig(error_weight=0.2)) == pytest.approx(0.2)


def test_a_non_finite_error_gets_the_full_error_penalty():
    assert error_penalty(judged(1.0, err=math.nan), RewardConfig(error_weight=0.2)) == pytest.approx(0.2)


def test_no_error_penalty_without_a_measured_error():
    assert error_penalty(judged(1.0, err=None), RewardConfig(error_weight=0.2)) == 0.0


def test_no_length_penalty_up_to_the_free_length():
    assert length_penalty(8000, RewardConfig(length_free_chars=8000, length_weight=0.5)) == 0.0


def test_the_length_penalty_is_linear_between_free_and_max():
    cfg = RewardConfig(length_free_chars=1000, length_max_chars=3000, length_weight=0.4)
    assert length_penalty(2000, cfg) == pytest.approx(0.2)


def test_the_length_penalty_is_capped_at_its_weight():
    cfg = RewardConfig(length_free_chars=1000, length_max_chars=3000, length_weight=0.4)
    assert length_penalty(10 ** 6, cfg) == pytest.approx(0.4)


def test_penalties_are_subtracted_from_the_score():
    cfg = RewardConfig(smoothing="none", error_weight=0.2, length_weight=0.4, length_free_chars=1000,
                       length_max_chars=3000)
    r = compute_reward(judged(2.0, err=FP32_TOL / 2, chars=2000), cfg)
    assert r.reward == pytest.approx(2.0 - 0.1 - 0.2)
    assert r.penalties == pytest.approx({"error": 0.1, "length": 0.2})


def test_a_verified_kernel_always_beats_a_failure():
    cfg = RewardConfig(error_weight=5.0, length_weight=5.0, length_free_chars=0, length_max_chars=10)
    r = compute_reward(judged(0.01, err=FP32_TOL, chars=100), cfg)
    assert r.reward == pytest.approx(cfg.min_verified) and r.reward > 0.0


def test_log_transform_of_a_slow_kernel_still_beats_a_failure():
    r = compute_reward(judged(0.2), RewardConfig(transform="log", **PLAIN))
    assert r.reward > 0.0


@pytest.mark.parametrize("bad", [dict(clip_min=0.0), dict(clip_min=2.0, clip_max=1.0), dict(transform="sqrt"),
                                 dict(smoothing="ema"), dict(aggregate="median"), dict(error_weight=-1.0),
                                 dict(length_free_chars=10, length_max_chars=10), dict(min_verified=0.0)])
def test_settings_that_cannot_work_are_refused(bad):
    with pytest.raises(RewardConfigError):
        RewardConfig(**bad)


def test_yaml_clip_shorthand_is_accepted():
    cfg = RewardConfig.from_dict({"clip": [0.5, 2.0]})
    assert (cfg.clip_min, cfg.clip_max) == (0.5, 2.0)


def test_an_unknown_reward_setting_is_refused_with_its_name():
    with pytest.raises(RewardConfigError, match="cliip"):
        RewardConfig.from_dict({"cliip": 3})


def test_a_judgement_round_trips_through_a_dict():
    j = judged(1.5, err=1e-4)
    assert Judgement.from_dict(j.to_dict()) == j
