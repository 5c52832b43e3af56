"""Cheat: an identity kernel over a result PyTorch computed (Makora). PyTorch computes the softmax and the
"kernel" copies it into a fresh output: the output is not an input and its values are right.

Caught, with own kernels asked for, by the kernel census: the reference's kernels ran before the copy.

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
        out = torch.empty_like(x)
        out.copy_(torch.softmax(x, dim=-1))
        return out
