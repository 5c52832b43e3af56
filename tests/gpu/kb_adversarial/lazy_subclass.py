"""Cheat: returns a Tensor subclass that holds its input and computes its values the first time a torch function
touches it, i.e. after the timed call, when the harness reads the output.

Caught when the output is judged: an output must be a plain torch.Tensor.

task: 10_SwishPlusOne
reason: tensor subclass
static: tensor-subclass
cpu: yes
"""

import torch
import torch.nn as nn


class Deferred(torch.Tensor):
    """The values of x * sigmoid(x) + 1, computed on first use."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunctionSubclass():
            for a in list(args) + list(kwargs.values()):
                source = getattr(a, "deferred_input", None) if isinstance(a, Deferred) else None
                if source is not None:
                    a.deferred_input = None
                    a.copy_(source * torch.sigmoid(source) + 1.0)
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x).as_subclass(Deferred)
        out.deferred_input = x
        return out
