"""Shared pieces of the kernelrl.train tests: small kernels in the evaluator's contract, judge functions that
misbehave (for the reward service's deadlines and retries; module-level so a spawned process can import them),
and a tiny random policy whose vocabulary holds whole kernels as single tokens."""

import os
import time

from kernelrl.train.service import Batch, Executor, judge_batch

KERNEL = '''#include <cuda_fp16.h>
#include <cuda_runtime.h>

__global__ void naive(const __half* A, const __half* B, __half* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= M || c >= N) return;
    float s = 0.f;
    for (int k = 0; k < K; ++k) s += __half2float(A[r * K + k]) * __half2float(B[k * N + c]);
    C[r * N + c] = __float2half(s);
}

extern "C" int kernelrl_hgemm(const __half* A, const __half* B, __half* C, int M, int N, int K,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    naive<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    return (int)cudaGetLastError();
}
'''
# A second honest kernel: same code, another comment, so it is measured as another candidate.
KERNEL_2 = KERNEL.replace("#include <cuda_fp16.h>", "// variant two\n#include <cuda_fp16.h>")
CHEAT = KERNEL.replace("dim3 block", "cudaStream_t mine; cudaStreamCreate(&mine);\n    dim3 block")
NO_ENTRY = KERNEL.replace("kernelrl_hgemm(", "my_gemm(")
UNBALANCED = KERNEL.replace("return (int)cudaGetLastError();\n}", "return (int)cudaGetLastError();\n")


def fenced(code: str, lang: str = "cuda", analysis: str = "The naive kernel reads A and B from DRAM.") -> str:
    return f"{analysis}\n\n```{lang}\n{code}```\n"


SUM_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(4, 8, 16)]


def get_init_inputs():
    return [1]
'''
SUM_HONEST = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.sum(dim=self.dim, keepdim=True)
'''
SUM_WRONG = SUM_HONEST.replace("x.sum(dim=self.dim, keepdim=True)", "x.sum(dim=self.dim, keepdim=True) * 1.01")


# -- judge functions for the service tests (the service calls them as judge_fn(spec_json, codes)) -----------------
def ok_judge(spec_json, codes):
    """Every candidate verified at 2× over torch."""
    shapes = {"64x64x64": {"us": 50.0, "baselines": {"torch": 100.0}, "max_rel_err": 0.0, "tolerance": 1e-3}}
    return {"ok": {n: {"category": "ok", "objective": "torch", "shapes": shapes, "code_chars": len(c)}
                   for n, c in codes.items()}}


def hang_if_marked_judge(spec_json, codes):
    """Hangs on a batch holding a candidate whose code contains HANG; verifies the rest."""
    if any("HANG" in c for c in codes.values()):
        time.sleep(3600)
    return ok_judge(spec_json, codes)


def env_judge(spec_json, codes):
    """Fails every candidate with the GPU its process was given, as the verdict."""
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    return {"ok": {n: {"category": "failed", "verdict": f"gpu {gpu}"} for n in codes}}


def dying_judge(spec_json, codes):
    """The evaluation process dies without an answer."""
    os._exit(3)


def failing_judge(spec_json, codes):
    """The evaluator fails by itself (not a kernel's verdict)."""
    return {"error": "RuntimeError: the evaluator broke"}


# -- a tiny policy -------------------------------------------------------------------------------------------------
def tiny_policy(path, snippets, bias=4.5, seed=0):
    """A random Phi model whose vocabulary holds each snippet (a whole fenced answer) as one token, written to
    `path`; the raised bias makes a random model emit a snippet now and then."""
    from kernelrl.train.tiny import write_random_model
    return write_random_model(path, snippets=snippets, hidden=32, layers=1, heads=2, snippet_bias=bias, seed=seed)


class InlineExecutor(Executor):
    """Runs the judge in this process; records the batches it was given. For the reward service's tests and
    train eval's (the real judge, default)."""

    capacity = 1

    def __init__(self, judge_fn=judge_batch, answers=None):
        self.judge_fn, self.answers, self.batches = judge_fn, list(answers or []), []

    def start(self, batch: Batch):
        self.batches.append(batch)
        return len(self.batches) - 1

    def wait(self, jobs, timeout):
        return list(jobs)

    def result(self, job):
        if self.answers:
            return self.answers.pop(0)
        b = self.batches[job]
        return self.judge_fn(b.spec, b.codes)
