"""Each KernelBench pair runs in a fresh working directory beneath the worker's scratch folder: a candidate that
builds into a relative folder (CUDA-L1's released kernels write `cuda_extensions/`) is judged on its kernel, its
files never reach the directory the run was started from, and no pair sees the files of the pair before it."""

import os

from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs
from tests.kb_helpers import task

WRITES_RELATIVE = '''import os
import torch
import torch.nn as nn

os.makedirs("cuda_extensions", exist_ok=True)  # as a JIT build into a relative folder does
with open(os.path.join("cuda_extensions", "marker.txt"), "w") as f:
    f.write("built")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
'''

EXPECTS_A_CLEAN_DIRECTORY = '''import os
import torch
import torch.nn as nn

if os.path.exists("cuda_extensions"):
    raise RuntimeError("the previous pair's files are here")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
'''


def test_relative_writes_land_in_the_pair_s_own_directory(tmp_path, monkeypatch):
    (tmp_path / "task.py").write_text(task("torch.tanh(x)"))
    (tmp_path / "writes.py").write_text(WRITES_RELATIVE)
    (tmp_path / "clean.py").write_text(EXPECTS_A_CLEAN_DIRECTORY)
    started_in = tmp_path / "run"
    started_in.mkdir()
    monkeypatch.chdir(started_in)
    pairs = [("../task.py", "../writes.py"), ("../task.py", "../clean.py")]  # relative, as a user may pass them
    out = run_pairs(pairs, KBSettings(device="cpu", baselines=("eager",), rounds=2, calls_per_round=2))
    assert pair_verdict(out[0]) == (True, None)
    # one worker judged both: the second saw a fresh directory
    assert pair_verdict(out[1]) == (True, None), pair_verdict(out[1])[1]
    assert os.listdir(started_in) == []
