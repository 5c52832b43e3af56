"""Reinforcement learning: train a kernel-writing model, the evaluator as its reward (`kernelrl train`).

CUDA-L1's three stages (SFT on verified kernels, self-supervised rounds, contrastive RL with GRPO) on TRL, with
CUDA-L2's curriculum (KernelBench-format kernels first, then HGEMM) and reward (mean speedup, clipped, zero for
anything wrong or caught cheating, penalties for numerical error and code length).

Modules: reward (the reward of one judgement), targets (what a completion is judged against, and the judge that
runs the evaluator), service (evaluation off the training process: local processes or Ray, deadlines, retries),
reward_fn (the function TRL calls; records variants for contrastive prompts), metrics (summaries, JSONL log,
trainer callbacks), datasets (prompts and SFT pairs), tiny (random models for tests and smoke runs), modeling
(loading, LoRA, saving), sampling (self-supervised sampling: transformers or vLLM), stages (SFT, self-supervised,
GRPO phases), config (the YAML file), pipeline (phases, state, resume)."""
