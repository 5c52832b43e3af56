"""A task whose inputs have structure (upper-triangular, symmetric: KernelBench level 1's 13-15) promises it to the
candidate; the evaluator's other draws (uniform redraws, secret perturbations of every call) keep that structure, so
a candidate that relies on it, as CUDA-L1's released kernels do, is judged on the task's own domain (CPU worker)."""

import torch

from kernelrl.kernelbench.inputs import InputsMixin, _structure
from kernelrl.kernelbench.worker import KBSettings, pair_verdict, run_pairs

TWO_INPUTS = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return {forward}

N = 24

def get_inputs():
    {draw}
    return [A, B]

def get_init_inputs():
    return []
'''

CANDIDATE = '''import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, A, B):
        return {body}
'''

TRIANGULAR = dict(forward="torch.triu(torch.matmul(A, B))",
                  draw="A = torch.triu(torch.randn(N, N)); B = torch.triu(torch.randn(N, N))")
SYMMETRIC = dict(forward="torch.matmul(A, B)",
                 draw="A = torch.randn(N, N); A = (A + A.T) / 2; B = torch.randn(N, N); B = (B + B.T) / 2")


def _judge(tmp_path, task: dict, body: str):
    (tmp_path / "task.py").write_text(TWO_INPUTS.format(**task))
    (tmp_path / "cand.py").write_text(CANDIDATE.format(body=body))
    settings = KBSettings(device="cpu", baselines=("eager",), rounds=1, calls_per_round=2,
                          extensions_dir=str(tmp_path / "ext"))
    return pair_verdict(run_pairs([(str(tmp_path / "task.py"), str(tmp_path / "cand.py"))], settings)[0])


def test_a_candidate_relying_on_triangular_inputs_is_judged_on_triangular_inputs(tmp_path):
    # reads only the upper triangles, as a triangular-matmul kernel does
    assert _judge(tmp_path, TRIANGULAR, "torch.triu(torch.matmul(torch.triu(A), torch.triu(B)))") == (True, None)


def test_a_candidate_relying_on_symmetric_inputs_is_judged_on_symmetric_inputs(tmp_path):
    assert _judge(tmp_path, SYMMETRIC, "torch.matmul(A.T, B)") == (True, None)


def test_structure_kept_is_not_a_free_pass_for_wrong_values(tmp_path):
    ok, reason = _judge(tmp_path, TRIANGULAR, "torch.triu(torch.matmul(A, B)) + 1e-2")
    assert not ok and reason.startswith("wrong values")


class _Inputs(InputsMixin):
    def __init__(self):
        import random
        self.device, self.rng = "cpu", random.Random(3)


def test_perturbations_and_uniform_redraws_keep_zeros_and_symmetry():
    torch.manual_seed(0)
    tri = torch.triu(torch.randn(16, 16))
    sym = torch.randn(16, 16)
    sym = (sym + sym.T) / 2
    xs = [tri.clone(), sym.clone()]
    _Inputs()._perturb(xs)
    assert not torch.equal(xs[0], tri) and torch.equal(xs[0], torch.triu(xs[0]))
    assert not torch.equal(xs[1], sym) and torch.equal(xs[1], xs[1].T)
    gen = torch.Generator().manual_seed(1)
    redrawn = [InputsMixin._uniform_like(x, gen) for x in (tri, sym)]
    assert torch.equal(redrawn[0], torch.triu(redrawn[0])) and torch.equal(redrawn[1], redrawn[1].T)
    assert _structure(torch.randn(8, 8)) == (False, False)


def test_each_calls_fresh_inputs_keep_the_pool_sets_structure():
    torch.manual_seed(1)
    tri = torch.triu(torch.randn(16, 16))
    inputs = _Inputs()
    for k in range(3):  # the structure is read from the pool's tensor once, and every call's clone keeps it
        (x,) = inputs._fresh([[tri]], k)
        assert not torch.equal(x, tri) and torch.equal(x, torch.triu(x))


def test_structure_is_read_chunk_by_chunk_with_the_same_answer(monkeypatch):
    # a whole-tensor count casts to int64 (32 GiB for level 1's 16 GiB pooling input on the H100): read in chunks
    from kernelrl.harness import compare
    monkeypatch.setattr(compare, "CHUNK_ELEMENTS", 50)
    torch.manual_seed(2)
    sym = torch.rand(6, 5, 5)
    sym = (sym + sym.mT) / 2
    assert _structure(sym) == (False, True)
    late_zero = sym.clone()
    late_zero[5, 4, 4] = 0  # on the diagonal, in the last chunk: still symmetric
    assert _structure(late_zero) == (True, True)
    late_asym = sym.clone()
    late_asym[5, 0, 4] += 1  # only the last matrix breaks symmetry
    assert _structure(late_asym) == (False, False)
