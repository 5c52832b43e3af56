"""The suite runner behind `python -m benchmarks`: the GPU key, the output folder, the steps and the summary.

A suite (benchmarks/catalog.py) is a list of steps; a step is one command (a script of benchmarks/suites/, a device
script of benchmarks/device/ or the kernelrl CLI) run from the repository root with its output in a log beside the
results. The runner adds nothing to what the scripts measure: it picks the folder (benchmarks/results/<gpu>/<suite>/
unless --out), runs the chosen steps in order (a failed step does not stop the next: each has its own files) and
writes summary.md there with the environment (kernelrl.environment), the commit and the exact command.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence, Union

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MARK = "<!-- written by python -m benchmarks -->"

Argv = Union[Sequence[str], Callable[[], Sequence[str]]]


@dataclass
class Step:
    """One command of a suite. argv may be a callable: built when the step starts (it may read an earlier step's
    files). log: the file (in the output folder) that takes its stdout and stderr."""

    name: str
    argv: Argv
    gpu: bool = True
    log: str = ""
    env: dict = field(default_factory=dict)


@dataclass
class Suite:
    name: str
    about: str  # one line, for --list
    steps: Sequence[str]  # every step name, in the order they run
    default: Sequence[str]  # the steps run without --steps
    gpu_steps: Sequence[str]  # the steps that need a GPU
    plan: Callable[[argparse.Namespace, Path], list]  # (args, out) -> [Step], one per selected step
    options: Callable[[argparse.ArgumentParser], None] = lambda ap: None
    notes: str = ""  # a paragraph for the suite's --help

    @property
    def gpu(self) -> str:
        if not self.gpu_steps:
            return "no"
        return "yes" if set(self.gpu_steps) & set(self.default) else "only " + ",".join(self.gpu_steps)


def gpu_key(name: str) -> str:
    """nvidia-smi's GPU name as a results folder: h100, h200, otherwise the model in lower case (a100-sxm4-80gb)."""
    low = name.lower()
    for card in ("h100", "h200"):
        if card in low:
            return card
    slug = re.sub(r"[^a-z0-9]+", "-", low.replace("nvidia", "")).strip("-")
    return slug or "cpu"


def detect_gpu() -> str:
    """The GPU key of GPU 0 (kernelrl.environment.gpu_info: nvidia-smi); `cpu` without nvidia-smi or a GPU."""
    from kernelrl.environment import gpu_info

    name = gpu_info().get("gpu", "")
    return gpu_key(name) if name else "cpu"


def _git(*args: str) -> str:
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")  # read only: no index refresh
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30,
                              env=env).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def commit() -> str:
    head = _git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return f"{head} (with uncommitted changes)" if dirty else head


def shown(argv: list) -> str:
    """argv as a user would type it from the repository root."""
    return shlex.join("python" if a == sys.executable else a.replace(f"{ROOT}/", "") for a in argv)


def _tee(argv: list, log: Path, env: dict) -> int:
    """Run argv from the repository root; its output goes to the terminal and to log."""
    with open(log, "w") as f:
        f.write(f"$ {shown(argv)}\n")
        f.flush()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        for line in proc.stdout:
            sys.stdout.write(line)
            f.write(line)
        return proc.wait()


def run_steps(steps: list, out: Path) -> list:
    """Each step in turn; returns (step, argv, exit status, seconds) per step."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    done = []
    for step in steps:
        argv = [str(a) for a in (step.argv() if callable(step.argv) else step.argv)]
        print(f"== {step.name}: {shown(argv)}", flush=True)
        start = time.monotonic()
        try:
            rc = _tee(argv, out / (step.log or f"{step.name}.log"), {**env, **step.env})
        except OSError as e:
            print(f"== {step.name}: {e}", flush=True)
            rc = 127
        done.append((step, argv, rc, time.monotonic() - start))
        print(f"== {step.name}: exit {rc} after {done[-1][3]:.1f} s", flush=True)
    return done


def write_summary(out: Path, suite: Suite, command: str, gpu: str, done: list, env: dict) -> Path:
    lines = [MARK, f"# `{suite.name}` suite on {gpu}", "", suite.about, "",
             f"Command (from the repository root): `{command}`", "",
             f"Code at {commit()}. Re-run it with the same command; `python -m benchmarks {suite.name} --help` "
             "gives the options and benchmarks/README.md the suite.", "", "## Environment", "",
             "| key | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in env.items()]
    lines += ["", "## Steps", "", "| step | exit | seconds | log | command |", "|---|---|---|---|---|"]
    for step, argv, rc, secs in done:
        lines.append(f"| {step.name} | {rc} | {secs:.1f} | {step.log or step.name + '.log'} | "
                     f"`{shown(argv)}` |")
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "summary.md")
    lines += ["", "## Files", ""] + [f"- `{f}`" for f in files] + [""]
    path = out / "summary.md"
    path.write_text("\n".join(lines))
    return path


def _list(suites: dict) -> str:
    width = max(len(n) for n in suites)
    return "\n".join(f"{n:<{width}}  gpu: {s.gpu:<10}  {s.about}" for n, s in suites.items())


def _parser(suite: Suite) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks {suite.name}", description=suite.about,
                                 epilog=suite.notes or None)
    ap.add_argument("--out", type=Path, default=None,
                    help=f"results folder (default benchmarks/results/<gpu>/{suite.name}/)")
    ap.add_argument("--gpu", default=None, help="the GPU key (default: detected; h100, h200, ..., cpu)")
    ap.add_argument("--steps", default=None,
                    help=f"comma-separated, of {', '.join(suite.steps)} (default {','.join(suite.default)}; "
                         f"GPU: {', '.join(suite.gpu_steps) or 'none'})")
    ap.add_argument("--force", action="store_true",
                    help="write into a folder whose summary.md was written by hand (a committed result)")
    ap.add_argument("--dry-run", action="store_true", help="print the steps' commands, run nothing")
    suite.options(ap)
    return ap


def main(suites: dict, argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m benchmarks --list | SUITE [--out DIR] [--gpu KEY] [--steps A,B] [suite options]\n"
             "       python -m benchmarks SUITE --help\n\n")
    if not argv or argv[0] in ("-h", "--help"):
        print(usage + _list(suites))
        return 0 if argv else 2
    if argv[0] == "--list":
        print(_list(suites))
        return 0
    name = argv[0]
    if name not in suites:
        print(f"benchmarks: no suite {name!r} (suites: {', '.join(suites)}; python -m benchmarks --list)",
              file=sys.stderr)
        return 2
    suite = suites[name]
    args = _parser(suite).parse_args(argv[1:])
    steps = [s.strip() for s in (args.steps or ",".join(suite.default)).split(",") if s.strip()]
    unknown = [s for s in steps if s not in suite.steps]
    if unknown:
        print(f"benchmarks: {name} has no step {', '.join(unknown)} (steps: {', '.join(suite.steps)})",
              file=sys.stderr)
        return 2
    steps = [s for s in suite.steps if s in steps]  # the suite's order
    gpu = args.gpu or detect_gpu()
    out = (args.out or RESULTS / gpu / name).resolve()
    args.steps = steps
    plan = [s for s in suite.plan(args, out) if s.name in steps]
    if args.dry_run:
        for s in plan:
            argv = s.argv() if callable(s.argv) and out.exists() else s.argv
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in s.env.items())
            print(f"{s.name}: {env + ' ' if env else ''}" + (shown([str(a) for a in argv]) if not callable(argv)
                                                            else "(built from earlier steps' files)"))
        return 0
    needs = [s.name for s in plan if s.gpu]
    if needs and gpu == "cpu" and not args.gpu:
        print(f"benchmarks: {name}'s steps {', '.join(needs)} need a GPU and nvidia-smi shows none "
              f"(--steps for the others, --gpu KEY to run anyway)", file=sys.stderr)
        return 2
    summary = out / "summary.md"
    if summary.exists() and not summary.read_text().startswith(MARK) and not args.force:
        print(f"benchmarks: {summary} was written by hand (a committed result): --out DIR for a new folder, "
              f"--force to write there", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "-m", "benchmarks", *argv])
    from kernelrl.environment import collect

    env = collect({"gpu_key": gpu})
    done = run_steps(plan, out)
    path = write_summary(out, suite, command, gpu, done, env)
    failed = [step.name for step, _, rc, _ in done if rc]
    print(f"{path}" + (f" (failed: {', '.join(failed)})" if failed else ""))
    return 1 if failed else 0
