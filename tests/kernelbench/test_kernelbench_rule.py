"""What KernelBench's own check says of a call (judge.kernelbench_rule): values within atol = rtol = 1e-2 in the
reference's shape and dtype, nothing about how they were made; recorded for every pair beside kernelrl's verdict."""

from pathlib import Path

import torch

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.judge import kernelbench_rule
from kernelrl.kernelbench.worker import KBSettings, run_pairs
from tests.kb_helpers import pairs_in, task

R = torch.linspace(-1, 1, 100)


def test_outputs_within_its_tolerance_pass():
    assert kernelbench_rule([R + 0.005], [R])


def test_outputs_beyond_its_tolerance_fail():
    assert not kernelbench_rule([R + 0.05], [R])


def test_another_shape_dtype_or_count_fails():
    assert not kernelbench_rule([R[:50]], [R])
    assert not kernelbench_rule([R.double()], [R])
    assert not kernelbench_rule([R, R], [R])


def test_nan_is_never_close_and_infinities_are_as_in_torch_allclose():
    nan, inf = torch.full((3,), float("nan")), torch.full((3,), float("inf"))
    assert not kernelbench_rule([nan], [nan]) and kernelbench_rule([inf], [inf.clone()])


def test_integer_outputs_are_judged_by_its_tolerance_too():
    """KernelBench's torch.allclose on indices: 101 is within 0.01 + 0.01 * 100 of 100; 3 is not within it of 2."""
    assert kernelbench_rule([torch.tensor([101])], [torch.tensor([100])])
    assert not kernelbench_rule([torch.tensor([3])], [torch.tensor([2])])


def test_each_pair_s_record_says_what_kernelbench_s_check_would_have_made_of_it(tmp_path):
    """An input returned after an in-place tanh has the right values (KernelBench accepts it) and kernelrl's
    `returned an input`; a wrong output fails both; an honest one passes both."""
    pairs = pairs_in(tmp_path, task("torch.tanh(x)"), {"honest": "torch.tanh(x)", "in_place": "x.tanh_()",
                                                        "wrong": "torch.tanh(x) + 0.1"})
    out = run_pairs(pairs, KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2))
    (honest,), (in_place,), (wrong,) = out[0], out[1], out[2]
    assert honest["verified"] and honest["kernelbench_rule"] is True
    assert in_place["verdict"] == "returned an input" and in_place["kernelbench_rule"] is True
    assert not wrong["verified"] and wrong["kernelbench_rule"] is False


def test_an_index_one_too_high_passes_kernelbench_s_check_and_not_kernelrl_s():
    cheat = Path(__file__).resolve().parents[1] / "gpu" / "kb_adversarial" / "index_off_by_one.py"
    (rec,) = run_pairs([(str(TASKS_DIR / "16_ArgmaxDim.py"), str(cheat))],
                       KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2))[0]
    assert rec["verdict"] == "wrong values" and rec["kernelbench_rule"] is True
