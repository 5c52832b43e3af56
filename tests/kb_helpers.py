"""Small KernelBench-format sources for the CPU tests of the KernelBench evaluator: a one-input task whose forward
is an expression of `x`, a candidate whose forward returns one, a folder of candidates beside their task, and
candidates judged one after another in one run (what one pair leaves for the next)."""

from pathlib import Path

from kernelrl.kernelbench.pairs import KBSettings, pair_verdict, run_pairs


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


def judged_in_order(tmp_path: Path, texts: dict[str, str], task_source: str | None = None,
                    **settings) -> list[tuple]:
    """Each named candidate judged against one task (ReLU unless `task_source`), in this order, in one run on the
    CPU worker: (verdict, notes, records) each."""
    task_path = tmp_path / "tasks" / "a.py"
    task_path.parent.mkdir(parents=True)
    task_path.write_text(task_source or task("torch.relu(x)"))
    cands = []
    for name, text in texts.items():
        path = tmp_path / "cands" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        cands.append(path)
    kw = dict(device="cpu", baselines=("eager",), rounds=1, calls_per_round=1, hang_timeout_s=20.0,
              extensions_dir=str(tmp_path / "ext"))
    out = run_pairs([(str(task_path), str(c)) for c in cands], KBSettings(**{**kw, **settings}))
    return [(pair_verdict(out[i]), " ".join(n for r in out[i] for n in (r.get("extra") or {}).get("notes", [])),
             out[i]) for i in range(len(cands))]
