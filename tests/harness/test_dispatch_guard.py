"""kernelrl/harness/dispatch_guard.py: a kernel registered for an existing PyTorch operator by code outside the
installed libraries is seen, after a load (every operator read) and after any other stretch (the operators
torch.library's record says gained a kernel); a candidate's own operator is its business."""

import torch

from kernelrl.harness.dispatch_guard import DispatchGuard
from kernelrl.harness.installed import library_prefixes


def test_an_override_of_an_aten_kernel_is_named_with_its_file():
    guard = DispatchGuard(library_prefixes())
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("sinc", lambda x: x.new_zeros(x.shape), "CPU")
        found = guard.foreign()
        assert len(found) == 1 and found[0].startswith("the CPU kernel of aten::sinc registered at ")
        assert __file__ in found[0]
        assert guard.foreign(everything=True) == found  # a load's full read finds the same
    finally:
        lib._destroy()
    assert guard.foreign(everything=True) == []


def test_a_candidate_s_own_operator_is_not_an_override():
    guard = DispatchGuard(library_prefixes())
    lib = torch.library.Library("kr_test_own_op", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        assert guard.foreign() == [] and guard.foreign(everything=True) == []
    finally:
        lib._destroy()
