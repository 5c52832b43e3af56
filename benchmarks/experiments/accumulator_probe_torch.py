"""Does torch.matmul (cuBLAS) give the exact result on the harness's `accumulator` inputs, under torch's default
flags and with reduced-precision split-K reductions disallowed? The harness skips the probe for NVIDIA's baselines;
this says whether a tuned library that calls torch.matmul would pass it.

    python benchmarks/experiments/accumulator_probe_torch.py > accumulator_probe_torch.txt
"""

import torch

from kernelrl.environment import collect
from kernelrl.verify.checks import make_inputs, reference

SHAPES = [(64, 64, 16384), (128, 128, 16384), (256, 512, 16384), (64, 4096, 16384), (256, 64, 8192),
          (512, 256, 8192), (1024, 1024, 1024), (128, 256, 4096), (8192, 8192, 16384)]


def main():
    print(f"# accumulator probe of torch.matmul; environment: {collect({'mode': 'probe'})}")
    print("| M | N | K | reduced-precision reduction allowed | elements differing from the exact result |")
    print("|---:|---:|---:|---|---:|")
    matmul = torch.backends.cuda.matmul
    for m, n, k in SHAPES:
        a, b = make_inputs(m, n, k, "accumulator", seed=m * n + k, device="cuda")
        ref = reference(a, b)
        for allowed in (True, False):
            matmul.allow_fp16_reduced_precision_reduction = allowed
            c = torch.matmul(a, b)
            print(f"| {m} | {n} | {k} | {allowed} | {int((c.float() != ref).sum())} |", flush=True)
        matmul.allow_fp16_reduced_precision_reduction = True


if __name__ == "__main__":
    main()
