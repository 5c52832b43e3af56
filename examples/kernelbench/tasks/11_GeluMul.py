import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """gelu(x) * y: a gated element-wise product (as in GEGLU)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.gelu(x) * y


SHAPE = (64, 16384)


def get_inputs():
    return [torch.randn(*SHAPE), torch.randn(*SHAPE)]


def get_init_inputs():
    return []
