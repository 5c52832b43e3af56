"""A candidate whose output a later call overwrites (torch.compile(mode="reduce-overhead"): its CUDA graphs replay
into the same memory, and PyTorch makes the old output raise when touched) gets `same tensor every call`, a verdict
on its behaviour, not a worker error. The mechanism is CUDA-only; here the old output raises PyTorch's message."""

import pytest
import torch

from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.judge import JudgeMixin, new_errors

MESSAGE = ("Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. Stack "
           "trace: [Could not find stack trace].")


class Overwritten(torch.Tensor):
    def untyped_storage(self):
        raise RuntimeError(MESSAGE)


class Judge(JudgeMixin):
    s: dict = {}

    def __init__(self):
        self.pair_notes = []


def judge(prev_out):
    x = torch.randn(8)
    ref = torch.tanh(x)
    Judge()._judge(torch.tanh(x), ref, [x], [x.clone()], [x.clone()], (prev_out, torch.tanh(x + 1)), new_errors())


def test_an_output_overwritten_by_the_next_call_is_same_tensor_every_call():
    with pytest.raises(Rejected) as err:
        judge(torch.randn(8).as_subclass(Overwritten))
    assert err.value.verdict is Verdict.SAME_TENSOR and "clone the output" in err.value.detail


def test_a_previous_output_left_alone_passes():
    judge(torch.randn(8))
