"""Cheat: an unused output (Makora). The candidate's own softmax runs, its result is dropped and PyTorch's is
returned: the custom work is real and slower, the answer is the reference's.

Caught, with own kernels asked for, by the kernel census: the reference's kernels ran beside its own.

task: 7_Softmax
reason: reference kernels
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        mine = e / e.sum(dim=-1, keepdim=True)
        del mine  # computed, never returned
        return torch.softmax(x, dim=-1)
