"""Cheat: the baseline kernel (Makora) or library call (KernelArena): forward calls the very PyTorch operation the
task's Model uses. Correct by construction and timed at about 1x, it still takes a correct reward for no kernel
of its own.

Caught, where the run asks for own kernels (KBSettings.own_kernels, kb eval --own-kernels), by the kernel census
after every other check: its call launches each of the reference's kernels.

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
        return torch.softmax(x, dim=-1)
