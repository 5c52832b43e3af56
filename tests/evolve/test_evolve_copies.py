"""Copies earn nothing new (evolve/copies.py): a kernel equal to one shown or proposed before once comments and
whitespace are gone is a `copy`, one that only renames the names it defines is a `renamed copy`; a kernel that
swaps a library call or changes a constant is a different kernel."""

from kernelrl.evolve.copies import CopyIndex
from tests.evolve_fake_server import GOOD

PY = '''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = torch.tanh(x)  # the activation
        return y * self.scale
'''


def index(language, **sources):
    idx = CopyIndex(language)
    for name, source in sources.items():
        idx.add(name, source)
    return idx


def test_whitespace_and_comments_only_is_a_copy():
    moved = PY.replace("  # the activation", "").replace("return y * self.scale", "return   y*self.scale  # done")
    assert index("python", best=PY).find(moved).kind == "copy"
    cuda = GOOD.replace("// Tiling:", "/* tiling */ // Tiling:", 1).replace("    ", "  ")
    assert index("cuda", best=GOOD).find(cuda).kind == "copy"


def test_renaming_what_the_kernel_defines_is_a_renamed_copy():
    renamed = PY.replace("scale", "factor").replace(" y ", " out ").replace("y *", "out *")
    match = index("python", best=PY).find(renamed)
    assert match.kind == "renamed copy" and match.of == "best"
    cuda = GOOD.replace("WARPS_M", "WGRID_M").replace("STAGES", "NSTAGE")
    assert index("cuda", best=GOOD).find(cuda).kind == "renamed copy"


def test_another_library_call_or_constant_is_a_new_kernel():
    idx = index("python", best=PY)
    assert idx.find(PY.replace("torch.tanh", "torch.sigmoid")) is None
    cuda = index("cuda", best=GOOD)
    assert cuda.find(GOOD.replace("BK = 32", "BK = 64")) is None
    assert cuda.find(GOOD.replace("STAGES = 2", "STAGES = 3")) is None
