"""Small KernelBench-format sources for the CPU tests of the KernelBench evaluator: a one-input task whose forward
is an expression of `x`, a candidate whose forward returns one, and a folder of candidates beside their task."""

from pathlib import Path


def task(forward: str = "torch.tanh(x)", rows: int = 64, cols: int = 32) -> str:
    return f'''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return {forward}

def get_inputs():
    return [torch.randn({rows}, {cols})]

def get_init_inputs():
    return []
'''


def candidate(body: str) -> str:
    return f'''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return {body}
'''


def pairs_in(folder: Path, task_source: str, bodies: dict[str, str]) -> list[tuple[str, str]]:
    """(task path, candidate path) for each named candidate body, written under `folder`."""
    (folder / "task.py").write_text(task_source)
    out = []
    for name, body in bodies.items():
        (folder / f"{name}.py").write_text(candidate(body))
        out.append((str(folder / "task.py"), str(folder / f"{name}.py")))
    return out
