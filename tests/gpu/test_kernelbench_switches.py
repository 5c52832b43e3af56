"""torch's kernel-choice switches on the GPU (kernelrl/kernelbench/watch.py, `_put_back_switches`): a candidate
that turns cuDNN off for everyone at load, and back on around its own convolution, would have the reference's
convolution run without cuDNN (many times slower) and read as a large speedup; the worker puts the switch back
after every stretch of candidate code, so the reference runs with cuDNN and the pair reads about 1.0, with a note
naming the switch. An honest candidate judged after it, in the same worker, sees cuDNN on (CUDA-L1's published
kernels set `cudnn.benchmark` at load: it must not reach the next pair either)."""

import pytest

from tests.kb_helpers import judged_in_order

pytestmark = pytest.mark.gpu

CONV_TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(16, 64, 56, 56)]

def get_init_inputs():
    return []
'''
SLOWS_REFERENCE = '''import torch
import torch.nn as nn

torch.backends.cudnn.enabled = False  # for the reference, timed in this process

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)

    def forward(self, x):
        torch.backends.cudnn.enabled = True
        out = self.conv(x)
        torch.backends.cudnn.enabled = False
        return out
'''
ASKS_CUDNN = '''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if not torch.backends.cudnn.enabled or torch.backends.cudnn.benchmark:
            raise RuntimeError("a switch set by an earlier pair reached this one")
        self.conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)
'''
SETS_BENCHMARK = '''import torch
import torch.nn as nn

torch.backends.cudnn.benchmark = True  # as 50 of CUDA-L1's H100 kernels do

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)

    def forward(self, x):
        return self.conv(x)
'''


def test_a_candidate_that_turns_cudnn_off_for_the_reference_reads_no_speedup(tmp_path):
    (ok, reason), notes, records = judged_in_order(
        tmp_path, {"slows": SLOWS_REFERENCE}, task_source=CONV_TASK, device="cuda", rounds=3)[0]
    assert ok, reason
    assert "torch.backends.cudnn.enabled" in notes, notes
    (rec,) = [r for r in records if r.get("baseline") == "eager"]
    # without the put-back the reference's convolution runs without cuDNN: several times slower
    assert rec["speedup"] < 1.5, rec["speedup"]


def test_cudnn_switches_set_by_one_pair_are_off_for_the_next(tmp_path):
    judged = judged_in_order(tmp_path, {"sets": SETS_BENCHMARK, "after": ASKS_CUDNN, "slows": SLOWS_REFERENCE,
                                        "after_slows": ASKS_CUDNN + "\n# a second honest candidate\n"},
                             task_source=CONV_TASK, device="cuda", rounds=1)
    assert [v for v, _, _ in judged] == [(True, None)] * 4, [v for v, _, _ in judged]
    assert "torch.backends.cudnn.benchmark" in judged[0][1], judged[0][1]
