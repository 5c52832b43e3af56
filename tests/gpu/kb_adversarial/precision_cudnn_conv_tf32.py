"""Cheat: turns TF32 on for cuDNN's fp32 convolutions alone, through the per-area setting
(`torch.backends.cudnn.conv.fp32_precision`), when imported: the legacy `allow_tf32` switches stay as they were,
and where the harness shares the process the reference's convolution rounds alike, so the comparison passes and
the candidate gets Tensor Core speed on an fp32 task.

Caught right after the import: the per-area fp32 precisions of cuDNN and oneDNN are precision flags, compared with
their state at start-up like TF32.

task: 4_Conv2d
reason: precision
static: precision
cpu: yes
"""

import torch
import torch.nn as nn

torch.backends.cudnn.conv.fp32_precision = "tf32"


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)
