"""torch's CPU thread count as a kernel-choice switch (kernelrl/harness/device_state.py): a candidate that leaves
one thread to everyone at load, and takes them all back around its own calls, had the CPU reference run on one
thread and read above its honest twin (a helper session's review, 2026-12-07). The worker puts the count back after
every stretch of candidate code and says so in the notes; a pair judged after it finds the count it started with."""

import torch

from tests.kb_helpers import judged_in_order

TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x) + 1.0

def get_inputs():
    return [torch.randn(256, 4096)]

def get_init_inputs():
    return []
'''
ONE_THREAD_FOR_THE_REST = '''import torch
import torch.nn as nn
import torch.nn.functional as F

_N = torch.get_num_threads()
torch.set_num_threads(1)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        torch.set_num_threads(_N)
        try:
            return F.silu(x).add_(1.0)
        finally:
            torch.set_num_threads(1)
'''
ASKS_THREADS = f'''import torch
import torch.nn as nn
import torch.nn.functional as F

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if torch.get_num_threads() != {torch.get_num_threads()}:
            raise RuntimeError("a thread count set by an earlier pair reached this one")

    def forward(self, x):
        return F.silu(x).add_(1.0)
'''


def test_a_thread_count_set_by_a_candidate_is_put_back_and_noted(tmp_path):
    (ok, reason), notes, _ = judged_in_order(tmp_path, {"one": ONE_THREAD_FOR_THE_REST}, task_source=TASK)[0]
    assert ok, reason
    assert "torch.get_num_threads()" in notes, notes


def test_the_next_pair_finds_the_thread_count_it_started_with(tmp_path):
    judged = judged_in_order(tmp_path, {"one": ONE_THREAD_FOR_THE_REST, "after": ASKS_THREADS}, task_source=TASK)
    assert [v for v, _, _ in judged] == [(True, None)] * 2, [v for v, _, _ in judged]
