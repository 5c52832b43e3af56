"""`kernelrl evolve --own-kernels` on a KernelBench task, on the CPU: a candidate that calls the task's own PyTorch
operation is `reference kernels` (no reward for PyTorch's output); one that computes it its own way is verified."""

from pathlib import Path

import pytest

from kernelrl.cli.parser import build_parser
from kernelrl.evolve.kb_target import KernelBenchTarget

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "examples" / "kernelbench" / "tasks" / "7_Softmax.py"
CALLS_TORCH = (ROOT / "tests" / "gpu" / "kb_adversarial" / "baseline_kernel_call.py").read_text()
OWN_WAY = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
'''


class Quiet:
    def stage(self, text):
        pass


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory):
    target = KernelBenchTarget(TASK, tmp_path_factory.mktemp("own"), device="cpu", rounds=1, own_kernels=True)
    return target.evaluate({"calls_torch": CALLS_TORCH, "own_way": OWN_WAY}, Quiet())


def test_a_candidate_that_calls_the_tasks_operation_earns_nothing(evaluations):
    ev = evaluations["calls_torch"]
    assert ev.category != "ok" and ev.key == "reference kernels" and ev.score is None, ev.verdict


def test_a_candidate_that_computes_it_its_own_way_is_verified(evaluations):
    ev = evaluations["own_way"]
    assert ev.category == "ok" and ev.score > 0, ev.verdict


def test_the_flag_reaches_evolve():
    args = build_parser().parse_args(["evolve", "--tasks", str(TASK), "--own-kernels"])
    assert args.own_kernels
