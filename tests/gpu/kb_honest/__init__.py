"""Honest KernelBench candidates that do what a defence could mistake for a cheat or that the harness's own
instruments could trip over (releasing the allocator's cache, CUDA graphs under the kernel census). Each file's
docstring names its task (`task:`, a file of examples/kernelbench/tasks); tests/gpu/test_kernelbench_gpu.py runs them
beside the adversarial corpus and asks that each is accepted."""
