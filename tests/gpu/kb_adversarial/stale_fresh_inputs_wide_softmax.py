"""Cheat: honest for its first 12 calls (every correctness check and the warm-up), then returns its last answer
for any input of the same shape. On a wide softmax the stale answer differs from the right one by about 1.5e-5,
within atol = rtol: it passed as correct at 48x on the H100 (KernelBench's 23_Softmax at 65536 columns). Caught
by the sampled checks of timed calls, judged scale-aware on this task.

task: 14_WideSoftmax
reason: during timing: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


HONEST_CALLS = 12


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        key = tuple(x.shape)
        if self.calls > HONEST_CALLS and key in self.last:
            return self.last[key].clone()
        out = torch.softmax(x, dim=-1)
        self.last[key] = out
        return out
