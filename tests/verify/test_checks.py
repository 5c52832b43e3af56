"""Correctness checks on CPU tensors: tolerances, 0/1 inputs, the output comparison, guard bands."""

import math

import pytest
import torch

from kernelrl.harness.verdicts import Verdict
from kernelrl.verify.checks import (FP16_EPS, GuardedBuffer, compare_output, guard_bytes_for, make_inputs,
                                    ones_density, reference, tolerance)
from kernelrl.workloads.hgemm import PAPER_DIMS


def normal_case(m, n, k, seed=0):
    a, b = make_inputs(m, n, k, "normal", seed)
    return reference(a, b)


# -- tolerance -----------------------------------------------------------------------------------------------

def test_fp16_tolerance_grows_with_k():
    values = [tolerance("fp16", k) for k in PAPER_DIMS]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_fp32_tolerance_is_fixed():
    assert {tolerance("fp32", k) for k in PAPER_DIMS} == {8 * FP16_EPS}


def test_fp16_tolerance_is_looser_than_fp32():
    assert tolerance("fp16", 64) > tolerance("fp32", 64)


# -- 0/1 inputs ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", PAPER_DIMS)
def test_expected_ones_count_stays_at_most_1024(k):
    assert k * ones_density(k) ** 2 <= 1024 + 1e-9


@pytest.mark.parametrize("k", PAPER_DIMS)
def test_density_is_a_probability(k):
    assert 0 < ones_density(k) <= 0.5


def test_binary_product_at_k_16384_stays_exact_in_fp16():
    a, b = make_inputs(256, 256, 16384, "binary", seed=3)
    assert set(torch.unique(a).tolist()) == {0.0, 1.0}
    product = reference(a, b)
    assert float(product.max()) <= 2048  # every integer up to 2048 is exact in fp16
    assert torch.equal(product.half().float(), product)


@pytest.mark.parametrize("kind", ["normal", "binary"])
def test_make_inputs_is_deterministic_per_seed(kind):
    a1, b1 = make_inputs(16, 24, 32, kind, seed=11)
    a2, b2 = make_inputs(16, 24, 32, kind, seed=11)
    assert torch.equal(a1, a2) and torch.equal(b1, b2)


@pytest.mark.parametrize("kind", ["normal", "binary"])
def test_make_inputs_differs_between_seeds(kind):
    a1, _ = make_inputs(16, 24, 32, kind, seed=11)
    a2, _ = make_inputs(16, 24, 32, kind, seed=12)
    assert not torch.equal(a1, a2)


def test_make_inputs_shapes_and_dtype():
    a, b = make_inputs(3, 5, 7, "normal", seed=0)
    assert (a.shape, b.shape, a.dtype, b.dtype) == ((3, 7), (7, 5), torch.float16, torch.float16)


def test_make_inputs_rejects_unknown_kind():
    with pytest.raises(ValueError, match="uniform"):
        make_inputs(2, 2, 2, "uniform", seed=0)


# -- compare_output ------------------------------------------------------------------------------------------

def test_exact_reference_passes():
    ref = normal_case(32, 32, 256)
    outcome = compare_output(ref.half(), ref, "fp32", 256)
    assert outcome.ok and outcome.reason is None


@pytest.mark.parametrize("k", [64, 512, 4096])
@pytest.mark.parametrize("acc", ["fp32", "fp16"])
def test_reference_rounded_to_fp16_passes(k, acc):
    ref = normal_case(64, 48, k, seed=k)
    outcome = compare_output(ref.half(), ref, acc, k)
    assert outcome.ok
    assert outcome.max_rel_err <= FP16_EPS  # rounding to fp16 is all the error there is


def test_plus_one_on_an_entry_near_zero_fails_at_k_16384():
    k = 16384
    ref = normal_case(16, 16, k)  # entries ~ N(0, K): rms near 128
    c = ref.half()
    i = int(ref.abs().argmin())
    c.view(-1)[i] += 1
    outcome = compare_output(c, ref, "fp32", k)
    rms = float(ref.pow(2).mean().sqrt())
    expected = abs(float(c.view(-1)[i]) - float(ref.view(-1)[i])) / (abs(float(ref.view(-1)[i])) + rms)
    assert not outcome.ok
    assert outcome.max_rel_err == pytest.approx(expected, rel=1e-6)
    assert "wrong values" in outcome.reason and "K=16384" in outcome.reason


def test_plus_one_on_the_largest_entry_is_within_fp32_tolerance_at_k_16384():
    """The metric is relative: one unit on an entry of several hundred is about two fp16 ulps there."""
    k = 16384
    ref = normal_case(16, 16, k)
    c = ref.half()
    i = int(ref.abs().argmax())
    assert abs(float(ref.view(-1)[i])) > 256
    c.view(-1)[i] += 1
    outcome = compare_output(c, ref, "fp32", k)
    assert outcome.ok
    assert FP16_EPS < outcome.max_rel_err <= tolerance("fp32", k)


def test_error_metric_by_hand():
    ref = torch.tensor([[3.0, 4.0]])  # rms = sqrt(12.5)
    c = torch.tensor([[3.0, 4.5]], dtype=torch.float16)
    outcome = compare_output(c, ref, "fp32", 2)
    assert outcome.max_rel_err == pytest.approx(0.5 / (4.0 + math.sqrt(12.5)))
    assert not outcome.ok


def test_nan_means_unwritten_output_with_first_index():
    ref = normal_case(8, 10, 64)
    c = ref.half()
    c[5, 1] = float("nan")
    c[2, 3] = float("nan")
    outcome = compare_output(c, ref, "fp32", 64)
    assert not outcome.ok and outcome.max_rel_err == math.inf
    assert outcome.reason.startswith("unwritten output")
    assert "2 of 80" in outcome.reason and "(2, 3)" in outcome.reason


def test_nan_fails_even_in_exact_mode():
    a, b = make_inputs(4, 4, 64, "binary", seed=0)
    ref = reference(a, b)
    c = ref.half()
    c[3, 3] = float("nan")
    assert compare_output(c, ref, "fp32", 64, exact=True).reason.startswith("unwritten output")


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_inf_fails(value):
    ref = normal_case(8, 8, 64)
    c = ref.half()
    c[0, 7] = value
    outcome = compare_output(c, ref, "fp16", 64)
    assert not outcome.ok and "Inf" in outcome.reason


def test_exact_mode_passes_the_exact_result():
    a, b = make_inputs(32, 32, 4096, "binary", seed=1)
    ref = reference(a, b)
    assert compare_output(ref.half(), ref, "fp32", 4096, exact=True).ok


def test_exact_mode_flags_any_difference():
    a, b = make_inputs(32, 32, 4096, "binary", seed=1)
    ref = reference(a, b)
    c = ref.half()
    c[7, 9] += 1
    outcome = compare_output(c, ref, "fp32", 4096, exact=True)
    assert not outcome.ok
    assert "1 elements differ" in outcome.reason and "(7, 9)" in outcome.reason
    # the same difference is well inside the tolerance of the non-exact check
    assert compare_output(c, ref, "fp32", 4096).ok


def test_all_zero_reference_does_not_divide_by_zero():
    ref = torch.zeros(4, 4)
    assert compare_output(ref.half(), ref, "fp32", 64).ok
    c = ref.half()
    c[0, 0] = 1
    assert not compare_output(c, ref, "fp32", 64).ok


# -- GuardedBuffer -------------------------------------------------------------------------------------------

@pytest.fixture
def guarded():
    return GuardedBuffer((3, 5), dtype=torch.float16, guard_bytes=300)  # 30 bytes of data: odd sizes everywhere


def test_guard_is_rounded_up_to_256_bytes(guarded):
    assert guarded.guard == 512


def test_intact_after_writing_inside(guarded):
    guarded.tensor.fill_(-1.5)
    assert guarded.intact()
    assert torch.all(guarded.tensor == -1.5)


def test_writing_one_byte_before_is_detected(guarded):
    guarded.raw[guarded.guard - 1] = 0
    assert not guarded.intact()


def test_writing_one_byte_after_is_detected(guarded):
    guarded.raw[guarded.guard + guarded.nbytes] = 0
    assert not guarded.intact()


def test_writing_the_last_padding_byte_is_detected(guarded):
    guarded.raw[-1] = 0
    assert not guarded.intact()


def test_rearm_restores_the_guards(guarded):
    guarded.raw[0] = 1
    guarded.raw[guarded.tail_start] = 1
    guarded.rearm()
    assert guarded.intact()


def test_rearm_leaves_the_data_alone(guarded):
    guarded.tensor.fill_(2.0)
    guarded.rearm()
    assert torch.all(guarded.tensor == 2.0)


@pytest.mark.parametrize("shape, dtype", [((3, 5), torch.float16), ((1,), torch.uint8), ((257, 3), torch.float16),
                                          ((1000,), torch.uint8)])
def test_data_pointer_is_256_byte_aligned_relative_to_raw(shape, dtype):
    buf = GuardedBuffer(shape, dtype=dtype, guard_bytes=1000)
    assert (buf.ptr() - buf.raw.data_ptr()) % 256 == 0
    assert buf.ptr() - buf.raw.data_ptr() == buf.guard
    assert tuple(buf.tensor.shape) == shape


@pytest.mark.parametrize("rows, row_bytes, expected", [(1, 2, 65536), (4096, 1024, 256 * 1024),
                                                       (1, 1 << 30, 32 << 20)])
def test_guard_bytes_for_is_clamped(rows, row_bytes, expected):
    assert guard_bytes_for(rows, row_bytes) == expected


# -- the accumulator probe -----------------------------------------------------------------------------------

def fp16_accumulated(a: torch.Tensor, b: torch.Tensor, step: int = 16) -> torch.Tensor:
    """What a kernel with an fp16 accumulator returns: the sum rounded to fp16 after every tensor-core step."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16)
    for k0 in range(0, a.shape[1], step):
        acc = (acc.float() + a[:, k0:k0 + step].float() @ b[k0:k0 + step].float()).half()
    return acc


@pytest.mark.parametrize("k", [3, 64, 128, 4096, 16384])
def test_accumulator_inputs_give_an_exact_fp16_result_in_fp32(k):
    a, b = make_inputs(16, 8, k, "accumulator", seed=k)
    ref = reference(a, b)
    assert torch.equal(ref.half().float(), ref)  # the result itself is exact in fp16
    assert compare_output(ref.half(), ref, "fp32", k, exact=True).ok


def test_accumulator_inputs_give_the_same_result_in_any_fp32_order():
    a, b = make_inputs(8, 8, 512, "accumulator", seed=4)
    ref = reference(a, b)
    perm = torch.randperm(512)
    halves = reference(a[:, perm[:256]], b[perm[:256]]) + reference(a[:, perm[256:]], b[perm[256:]])
    assert torch.equal(halves, ref)


@pytest.mark.parametrize("k", [64, 128])
def test_fp16_accumulation_passes_the_fp32_tolerance_at_small_k_but_not_the_accumulator_inputs(k):
    a, b = make_inputs(64, 64, k, "normal", seed=1)
    assert compare_output(fp16_accumulated(a, b), reference(a, b), "fp32", k).ok  # why the probe exists
    a, b = make_inputs(64, 64, k, "accumulator", seed=1)
    outcome = compare_output(fp16_accumulated(a, b), reference(a, b), "fp32", k, exact=True,
                             exact_verdict=Verdict.PRECISION)
    assert not outcome.ok and outcome.verdict is Verdict.PRECISION


def test_fp16_split_k_partials_fail_the_accumulator_inputs():
    a, b = make_inputs(32, 32, 256, "accumulator", seed=2)
    partials = (reference(a[:, :128], b[:128]).half(), reference(a[:, 128:], b[128:]).half())
    c = (partials[0].float() + partials[1].float()).half()
    assert not compare_output(c, reference(a, b), "fp32", 256, exact=True).ok


def test_accumulator_inputs_need_three_k_terms():
    with pytest.raises(ValueError, match="K >= 3"):
        make_inputs(2, 2, 2, "accumulator", seed=0)


# -- bf16 ----------------------------------------------------------------------------------------------------

def test_bf16_inputs_and_their_tolerance():
    a, b = make_inputs(8, 8, 64, "normal", seed=0, dtype="bf16")
    assert a.dtype == b.dtype == torch.bfloat16
    assert tolerance("fp32", 64, "bf16") == 8 * 2.0 ** -8 > tolerance("fp32", 64)


@pytest.mark.parametrize("kind", ["binary", "accumulator"])
def test_exact_bf16_outputs_are_the_exact_result_rounded_once(kind):
    a, b = make_inputs(16, 16, 4096, kind, seed=5, dtype="bf16")
    ref = reference(a, b)
    assert compare_output(ref.to(torch.bfloat16), ref, "fp32", 4096, exact=True).ok
    off = ref.to(torch.bfloat16)
    off[3, 4] += 8  # a bf16 step or more at these magnitudes
    assert not compare_output(off, ref, "fp32", 4096, exact=True).ok


def test_a_bf16_output_within_its_rounding_passes_the_tolerance():
    a, b = make_inputs(32, 32, 512, "normal", seed=2, dtype="bf16")
    ref = reference(a, b)
    assert compare_output(ref.to(torch.bfloat16), ref, "fp32", 512).ok
    assert not compare_output((ref * 1.05).to(torch.bfloat16), ref, "fp32", 512).ok
