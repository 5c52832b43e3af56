"""The arguments of `kernelrl train eval` (kernelrl/train/heldout.py), apart from that module so that building the
command line parser imports nothing heavy."""

from __future__ import annotations

import argparse

EVAL_HELP = ("held-out evaluation of spec policies beside random specs and the cost model's pick (best-of-k, fast_p, "
             "cheats; kernelrl/train/heldout.py)")


def add_eval_arguments(te: argparse.ArgumentParser) -> None:
    te.add_argument("--policy", action="append", default=[], metavar="NAME=MODEL_DIR",
                    help="a saved causal LM folder and its tokenizer (repeatable), e.g. a phase's model/ folder")
    te.add_argument("--shapes", default=None, help="a shape set: paper, sample:N:SEED, 64x64x64,128x256x512 ...")
    te.add_argument("--split", default=None, metavar="FILE.json", help="shapes from this file's 'heldout' list")
    te.add_argument("--k", type=int, default=8, help="samples per policy and shape")
    te.add_argument("--acc", default="fp32", choices=["fp32", "fp16"])
    te.add_argument("--tasks", action="append", default=[], metavar="PATH",
                    help="KernelBench task files or folders (repeatable), in place of shapes: free-form policies "
                    "write a ModelNew for each")
    te.add_argument("--reference", action="store_true", help="with --tasks, add `reference`: each task's own Model "
                    "as the candidate (the evaluator should read 1.0x)")
    te.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="with --tasks: where tasks run")
    te.add_argument("--baselines", default=None, help="default cublas_nn,torch (shapes) or eager (tasks)")
    te.add_argument("--objective", default=None, help="the baseline speedups are over (default cublas_nn or eager)")
    te.add_argument("--runner", default="local", choices=["local", "dummy", "recorded"])
    te.add_argument("--recorded", default=None, metavar="TABLE", help="runner recorded: the table it replays")
    te.add_argument("--random", type=int, default=0, metavar="N", help="add `random`: N uniform random specs per "
                    "shape")
    te.add_argument("--cost-model", action="store_true", help="add `cost_model`: the cost model's first pick")
    te.add_argument("--turns", type=int, default=1, help="sample each policy's k specs in this many turns, each "
                    "turn measured before the next is sampled")
    te.add_argument("--contrastive", action="append", default=[], metavar="NAME",
                    help="a --policy trained on contrastive prompts: after the first turn its prompt shows its own "
                    "earlier specs of the shape with their measured outcomes, as in training (repeatable)")
    te.add_argument("--top-k", type=int, default=3, help="contrastive prompts: fastest earlier specs shown")
    te.add_argument("--negatives", type=int, default=1, help="contrastive prompts: latest failures shown")
    te.add_argument("--confirm", action="store_true", help="measure every method's best spec of each shape once "
                    "more, in one call per shape, and report that (best-of-k is biased up by its own noise)")
    te.add_argument("--resume", action="store_true", help="go on from the shapes an earlier run with the same "
                    "methods left in DIR/heldout.csv (written shape by shape)")
    te.add_argument("--report", action="store_true", help="measure nothing: write best.csv and the summaries from "
                    "the shapes DIR/heldout.csv holds (a run its time limit stopped); the shapes it lacks are named")
    te.add_argument("--out", required=True, metavar="DIR")
    te.add_argument("--seed", type=int, default=0)
    te.add_argument("--temperature", type=float, default=1.0)
    te.add_argument("--max-new-tokens", type=int, default=40)
    te.add_argument("--prompt-format", default="text", choices=["text", "chat"])
    te.add_argument("--rounds", type=int, default=5, help="timing rounds of the measurement")
    te.add_argument("--hang-timeout", type=float, default=60.0, help="seconds without progress before a hang")
    te.add_argument("--timeout", type=float, default=900.0, help="seconds per scoring batch, building included")
