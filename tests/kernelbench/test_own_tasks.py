"""kernelrl's own KernelBench-format tasks: each loads, and its Model runs on the CPU with finite outputs."""

import pytest
import torch

from kernelrl.examples import TASKS_DIR
from kernelrl.kernelbench.tasks import discover, inspect_task, load_module

FILES, _ = discover([TASKS_DIR])


def test_at_least_twelve_tasks():
    assert len(FILES) >= 12


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_task_runs_on_cpu(path):
    assert inspect_task(path).error is None
    module = load_module(path)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).eval()
    inputs = module.get_inputs()
    assert all(x.dtype == torch.float32 for x in inputs)
    with torch.no_grad():
        out = model(*inputs)
        again = model(*inputs)
    assert isinstance(out, torch.Tensor) and out.numel() > 0 and torch.isfinite(out).all()
    assert out.shape == again.shape and torch.equal(out, again)
