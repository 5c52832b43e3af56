"""Issue 29's multi-turn run: `kernelrl evolve --turns 3` on KernelBench tasks against a scripted model that reacts
to the evaluator's verdicts, once with `--overlap` and once without, so the per-turn table and the busy fractions
of the evaluator and the generator can be read side by side.

The "model" (tests/evolve_fake_server.py on loopback) reads the task from its prompt and answers by the last
message: a first attempt scales the reference's output by 1.5 (wrong values); after a failed verdict it sends the
reference itself as ModelNew (correct, about 1x); after a verified one, the reference with its output made
contiguous (a new kernel, correct). So turn 1 verifies none, turns 2 and 3 all (the second generation repeats
the first's kernels: copies, not evaluated again): the loop, the feedback and the accounting are what is
measured, not a model's skill.

    python benchmarks/suites/multiturn_scripted.py OUT_DIR --tasks KernelBench/level1 --limit 8            # GPU
    python benchmarks/suites/multiturn_scripted.py OUT_DIR --tasks KernelBench/level1 --modes overlap   # one half
    python benchmarks/suites/multiturn_scripted.py OUT_DIR --tasks KernelBench/level1 --baselines eager  # cheaper
    python benchmarks/suites/multiturn_scripted.py OUT_DIR --tasks examples/kernelbench/tasks --limit 4 --kb-device cpu

The GPU machine needs the `openai` package carried (benchmarks/suites/evolve_proof.py says how)."""

import argparse
import ast
import contextlib
import io
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kernelrl.cli import main  # noqa: E402
from tests.evolve_fake_server import FakeServer, answer, reply  # noqa: E402

TASK_BLOCK = re.compile(r"```python\n(.*?class Model\(nn\.Module\).*?)```", re.S)


def as_candidate(task: str, tail: str = "") -> str:
    """The task's Model as ModelNew (a subclass of it renamed, its forward's signature kept); `tail` is appended to
    forward's result."""
    fn = next(n for c in ast.parse(task).body if isinstance(c, ast.ClassDef) and c.name == "Model"
              for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    names = [a.arg for a in fn.args.args[1:]]
    code = re.sub(r"\bModel\b", "_Reference", task)
    code = re.sub(r"\ndef get_inputs.*", "\n", code, flags=re.S)
    return code + (f"\n\nclass ModelNew(_Reference):\n    def forward({ast.unparse(fn.args)}):\n"
                   f"        return super().forward({', '.join(names)}){tail}\n")


REPLY_DELAY_S = [0.0]  # a real model's generation time, emulated (--reply-delay)


def scripted(body: dict) -> dict:
    delay = REPLY_DELAY_S[0]
    first = body["messages"][1]["content"]
    last = body["messages"][-1]["content"]
    found = TASK_BLOCK.search(first)
    if not found:
        return reply("I cannot find the task in the prompt.", delay_s=delay)
    task = found.group(1)
    if "Turn " not in last:
        return reply(answer(as_candidate(task, " * 1.5"), lang="python", analysis="Scale the output (wrong)."),
                     delay_s=delay)
    if "- verified" in last:
        return reply(answer(as_candidate(task, ".contiguous()"), lang="python", analysis="Keep it; tidy the output."),
                     delay_s=delay)
    return reply(answer(as_candidate(task), lang="python", analysis="The verdict says wrong values: undo the scale."),
                 delay_s=delay)


def run(out: Path, tasks: list[str], overlap: bool, extra: list[str]) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    calls = 6 * len(tasks)  # two generations of three turns: the second generation's requests can overlap
    printed = io.StringIO()
    started = time.perf_counter()
    with FakeServer(scripted) as server, contextlib.redirect_stdout(printed):
        code = main(["evolve", "--tasks", *tasks, "--base-url", server.url, "--model", "scripted-model",
                     "--budget-calls", str(calls), "--islands", "1", "--concurrency", "1", "--turns", "3",
                     "--generations", "2", "--db", str(out / "evolve.db"), "--usage-log", str(out / "usage.jsonl"),
                     "--rng-seed", "0", *(["--overlap"] if overlap else []), *extra])
    text = printed.getvalue()
    (out / "evolve.log").write_text(text)
    usage = [json.loads(line) for line in (out / "usage.jsonl").read_text().splitlines() if line.strip()]
    turns = [u for u in usage if u.get("kind") == "turn"]
    return {"exit": code, "wall_s": round(time.perf_counter() - started, 1), "turns": turns,
            "closing": [line for line in text.splitlines() if line.startswith(("turn ", "busy:", "this run:"))]}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tasks", required=True, help="a folder of KernelBench-format tasks")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--kb-device", default=None, help="cpu for a dry run")
    ap.add_argument("--baselines", default=None,
                    help="the KernelBench baselines timed beside each candidate (evolve's default: all four; eager "
                         "alone makes an evaluation several times cheaper, so both halves fit the device's calls)")
    ap.add_argument("--modes", default="sequential,overlap",
                    help="which halves to run, comma-separated (one device call may hold only one of them)")
    ap.add_argument("--reply-delay", type=float, default=2.0,
                    help="seconds the scripted model takes per reply (a real model's generation time, emulated)")
    args = ap.parse_args()
    REPLY_DELAY_S[0] = args.reply_delay
    folder = Path(args.tasks)
    tasks = sorted((str(p) for p in folder.glob("*.py")), key=lambda p: int(Path(p).stem.split("_")[0]))
    tasks = tasks[:args.limit]
    extra = (["--kb-device", args.kb_device] if args.kb_device else []) + \
        (["--baselines", args.baselines] if args.baselines else [])
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"sequential", "overlap"}:
        ap.error(f"--modes takes sequential and/or overlap, comma-separated, not {args.modes!r}")
    results = {mode: run(Path(args.out) / mode, tasks, mode == "overlap", extra) for mode in modes}
    (Path(args.out) / "multiturn.json").write_text(json.dumps(results, indent=1))
    for name, r in results.items():
        print(f"{name}: exit {r['exit']}, {r['wall_s']} s")
        for line in r["closing"]:
            print("  " + line)
