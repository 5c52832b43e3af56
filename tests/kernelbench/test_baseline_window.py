"""The harness's own baseline preparation is no window for a candidate: a compile callback the candidate registers at
import runs inside the harness's torch.compile of the reference, where it slowed torch.sigmoid (the reference's) and
was adopted by the guards' re-capture: accepted at about 9x (a review's finding, CPU worker). The callback itself is
now seen at load, in any order (tamper.global_hooks counts torch.compile's and the garbage collector's callbacks),
and the re-capture adopts only torch's own known replacements (watch._recapture_after_baselines); the honest
candidates around it are judged as alone."""

import textwrap
from pathlib import Path

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs

TASK = Path(__file__).resolve().parents[2] / "examples" / "kernelbench" / "tasks" / "10_SwishPlusOne.py"

HONEST = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.silu(x) + 1.0
'''

SLOWS_THE_REFERENCE_IN_THE_COMPILE = '''
import importlib

import torch
import torch.nn as nn

_torch = importlib.import_module("torch")
_sigmoid = getattr(_torch, "sig" + "moid")


def _slow(*args, **kwargs):
    total = 0
    for i in range(200000):
        total += i
    return _sigmoid(*args, **kwargs)


def _on_compile_start(*_):  # runs inside the harness's compile of the reference, between two guard captures
    setattr(_torch, "sig" + "moid", _slow)


importlib.import_module("torch._dynamo.callback").callback_handler.register_start_callback(_on_compile_start)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.nn.functional.silu(x) + 1.0
'''


def test_a_callback_that_runs_in_the_baselines_compile_is_the_candidate_s_verdict(tmp_path):
    paths = []
    for name, source in (("honest_before", HONEST), ("cheat", SLOWS_THE_REFERENCE_IN_THE_COMPILE),
                         ("honest_after", HONEST)):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        paths.append(path)
    settings = KBSettings(device="cpu", baselines=("eager", "compile_default"), rounds=2, calls_per_round=2,
                          hang_timeout_s=120.0)
    out = run_pairs([(str(TASK), str(p)) for p in paths], settings)
    assert pair_verdict(out[0]) == (True, None) and pair_verdict(out[2]) == (True, None)
    ok, reason = pair_verdict(out[1])
    assert not ok and reason.startswith("harness patch") and "start_callbacks = 1 (was 0) during load" in reason, reason
