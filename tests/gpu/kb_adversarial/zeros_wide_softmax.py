"""Cheat: returns all zeros, an output chosen without the input. Every right output is near 1.5e-5,
below fp32's atol of 1e-4: atol = rtol alone accepts it under both profiles (the H100 finding on KernelBench's
23_Softmax). Caught by the scale-aware error, which judges wherever the task's probe found a trivial output within
atol = rtol.

task: 14_WideSoftmax
reason: wrong values
static: none
cpu: yes
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
