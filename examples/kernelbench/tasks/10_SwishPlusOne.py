import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(x) + 1: an element-wise chain to fuse."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) + 1.0


SHAPE = (64, 16384)


def get_inputs():
    return [torch.randn(*SHAPE)]


def get_init_inputs():
    return []
