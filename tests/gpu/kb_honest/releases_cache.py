"""Honest: a Triton kernel for x * sigmoid(x) + 1, after torch.cuda.empty_cache() in every call (as a CUDA graph's
capture does): the cache the memory guard poisoned goes back to the driver mid-call, and the out-of-bounds check
must compare only the memory still mapped (reading the rest is an illegal address), not crash the worker.

task: 10_SwishPlusOne
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _swish_plus_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x / (1.0 + tl.exp(-x)) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.cuda.empty_cache()
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _swish_plus_one[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
