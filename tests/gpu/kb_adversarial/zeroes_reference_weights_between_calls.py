"""Cheat: has every check compare it with a reference computed on zero weights. The reference instance is found as
slows_reference_instance finds it (ctypes routes that raise no audit event); each call of the candidate returns
relu(bias), what the task gives for W = 0, and writes zeros into the reference's weight through `.data` (no
version counter moves) at its end, so the reference computed right after it on the same inputs agrees; a finalizer
on its input puts the weight back when the harness frees the input, after the judgement, so after the load and at
the pair's end the weights read as the task made them. Accepted before the defence (CPU worker, 2026-12-07):
correct, every element of x ignored.

Caught at its first check: the reference's parameters are compared with the task's before every reference call
(judge.py `_reference`, task_guard.ReferenceSnapshot): `harness patch`.

task: 3_MatmulBiasReLU
reason: harness patch
static: none
cpu: yes
"""

import ctypes
import struct
import sys
import weakref

import torch
import torch.nn as nn


def _task_model_classes():
    """The task modules' Model classes, the last loaded first (earlier pairs' tasks stay in sys.modules)."""
    return [module.Model for name, module in reversed(list(sys.modules.items()))
            if name.startswith("kernelrl_kb_") and hasattr(module, "get_inputs") and hasattr(module, "Model")]


def _read(address, size):
    buffer = torch.empty(size, dtype=torch.uint8)
    ctypes.memmove(buffer.data_ptr(), address, size)
    return buffer.numpy().tobytes()


def _live_instance(cls):
    with open("/proc/self/maps") as maps:
        rows = [line.split() for line in maps]
    regions = [tuple(int(v, 16) for v in r[0].split("-")) for r in rows
               if r[1].startswith("rw") and not (len(r) > 5 and r[5].startswith("/dev"))]
    inside = lambda a: any(lo <= a < hi - 16 for lo, hi in regions)  # noqa: E731
    pattern, chunk = struct.pack("<Q", id(cls)), 16 << 20
    for lo, hi in regions:
        for base in range(lo, hi, chunk):
            blob = _read(base, min(chunk, hi - base))
            i = blob.find(pattern)
            while i != -1:
                address = base + i - 8
                if i % 8 == 0 and i >= 8 and 0 < struct.unpack_from("<q", blob, i - 8)[0] < 1 << 20:
                    head = address - 16  # a live object's GC neighbour links back to it
                    after = struct.unpack("<Q", _read(head, 8))[0] & ~3
                    if inside(head) and inside(after) and \
                            struct.unpack("<Q", _read(after + 8, 8))[0] & ~3 == head:
                        found = ctypes.cast(address, ctypes.py_object).value
                        if type(found) is cls:
                            return found
                i = blob.find(pattern, i + 1)
    return None


def _reference_linear():
    for cls in _task_model_classes():
        found = _live_instance(cls)
        if found is not None:
            return found.linear
    return None


_LINEAR = _reference_linear()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        out = torch.relu(self.linear.bias).expand(x.shape[0], -1).contiguous()
        if _LINEAR is not None:
            weight = _LINEAR.weight.data
            saved = weight.clone()
            weight.zero_()
            weakref.finalize(x, weight.copy_, saved)
        return out
