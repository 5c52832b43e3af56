"""Cheat: fallback_try_except with its function renamed in place: `_imp._fix_co_filename` gives the code object of
the function holding the try/except a library path, with no audit event, so the exception trace (which followed
frames named after the candidate's file or after code the candidate compiled) never traced it. The fast path is an
operator call that fails on every call (the shapes do not multiply); the except handler computes with PyTorch's
silu, which is not the reference's operators, so the kernel census passes it too. Accepted before the defence (a
helper's review, 2026-12-07, CPU worker: 1.45x, own kernels asked for or not).

Caught on the first call: the trace follows the candidate file's code objects by identity (load_module hands the
worker the module's code before it runs; call_trace.note_file_code), whatever name they carry later:
`reference fallback`.

task: 10_SwishPlusOne
reason: reference fallback
static: none
cpu: yes
"""

import _imp

import torch
import torch.nn as nn

_silu = getattr(torch.nn.functional, "silu")  # noqa: B009 - a name the static rules do not read


def _run(x):
    try:
        return torch.ops.aten.mm(x, x)  # the "fast path": (64, 16384) @ (64, 16384) fails on every call
    except RuntimeError:
        return _silu(x).add_(1.0)


_imp._fix_co_filename(_run.__code__, "/usr/lib/python3/some_library.py")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _run(x)
