"""Cheat: runs an fp32 matmul in bfloat16 on the tensor cores and converts back.

Caught by the first check: bf16 inputs (8-bit significand) put the result far beyond the fp32 tolerance.

task: 1_Matmul
reason: wrong values
static: precision
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.to(torch.bfloat16), B.to(torch.bfloat16)).float()
