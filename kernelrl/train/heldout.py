"""Held-out evaluation of spec policies: `kernelrl train eval`.

For each held-out shape every method writes specs: each saved policy k samples, `random` uniform random specs over
the grammar, `cost_model` the tuner's cost model's first pick. A policy's k samples may come in turns (`--turns`):
each turn is measured before the next is sampled, and a policy trained on contrastive prompts (`--contrastive`)
then reads its own earlier specs of the shape with their outcomes, as it did in training (CUDA-L1's use of the
method at test time); the others read the plain prompt (the shape only) every turn. All of a turn's specs of a shape
are scored in one RewardService.score call, so they are one interleaved measurement and their speedups over the
objective are comparable; `--confirm` measures every method's best spec of each shape once more, together, and
reports that. Writes heldout.csv (every sample), best.csv (best verified of k per method and shape), summary.json
and summary.md (fast_p, geomeans, spread, verdicts, cheats)."""

from __future__ import annotations

import collections
import csv
import hashlib
import json
import math
import random
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import Callable

import torch

from kernelrl.errors import UserError
from kernelrl.evolve.hardware import detect
from kernelrl.evolve.target import geomean
from kernelrl.kernelbench.tasks import discover
from kernelrl.space.base import SPACES
from kernelrl.space.model import rank
from kernelrl.space.spec import SPEC_FAMILIES, Spec, SpecError, parse_spec, spec_of, writable_knobs
from kernelrl.train.datasets import Prompter, answer_text, to_text
from kernelrl.train.reward import RewardConfig
from kernelrl.train.service import EvalSettings, RewardService
from kernelrl.train.specs import prompt_messages, shown_variants, trick_of
from kernelrl.train.targets import TargetSpec
from kernelrl.workloads.hgemm import ShapeError, parse_shapes

FAST_P = (0.0, 1.0, 1.1, 1.25)
BUILTIN = ("random", "cost_model")


class HeldoutError(UserError, ValueError):
    """Bad input to `kernelrl train eval`; one line says what."""


# -- inputs --------------------------------------------------------------------------------------------------------
def load_shapes(shapes: str | None, split: str | None, acc: str = "fp32") -> list[str]:
    """Shape names from a shape-set string, or from the "heldout" list of a split file."""
    if bool(shapes) == bool(split):
        raise HeldoutError("train eval: give --shapes SET or --split FILE.json (one of them)")
    if split:
        try:
            names = json.loads(Path(split).read_text())["heldout"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HeldoutError(f"--split {split}: not a JSON file with a 'heldout' list of shapes ({exc})") from None
        shapes = ",".join(names) if isinstance(names, list) and names else ""
    try:
        return [p.name for p in parse_shapes(shapes or "", acc=acc)]
    except ShapeError as exc:
        raise HeldoutError(f"{'--split ' + split if split else '--shapes'}: {exc}") from None


def parse_policies(items: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in items or []:
        name, eq, folder = item.partition("=")
        if not eq or not name or not folder:
            raise HeldoutError(f"--policy {item!r}: write NAME=MODEL_DIR")
        if name in out or name in BUILTIN:
            raise HeldoutError(f"--policy {name}: the name is taken (repeated, or one of {', '.join(BUILTIN)})")
        path = Path(folder)
        if not (path / "config.json").is_file():
            raise HeldoutError(f"--policy {name}: {folder} is not a saved model folder (no config.json there)")
        out[name] = path
    return out


@dataclass
class Items:
    """What is evaluated: HGEMM shapes (spec policies) or KernelBench tasks (free-form policies), each with its
    target (a TargetSpec's JSON) and its prompt given what the method wrote on it before."""
    kind: str  # "shape" or "task": the name of heldout.csv's item column
    names: list[str]
    targets: dict[str, str]
    prompt: Callable[[str, Sequence[tuple[str, str]]], object]  # (name, earlier (spec, outcome) pairs) -> the prompt


def shape_items(args, baselines: tuple, out: Path) -> Items:
    shapes = load_shapes(args.shapes, args.split, args.acc)
    targets = {s: TargetSpec("hgemm", baselines, args.objective, args.rounds, args.hang_timeout, str(out),
                             shapes=(s,), acc=args.acc, runner=args.runner, completion="spec",
                             recorded=args.recorded or "").to_json() for s in shapes}
    return Items("shape", shapes, targets, lambda s, earlier: prompt_of(s, args.acc, args.prompt_format, earlier))


def task_items(args, baselines: tuple, out: Path) -> Items:
    """Held-out KernelBench tasks: a policy is prompted as the free-form loop prompts a first attempt (the task, the
    GPU, the instructions) and its completion is judged by the KernelBench evaluator against the baselines."""
    if args.shapes or args.split:
        raise HeldoutError("train eval: give --tasks or --shapes/--split, not both")
    files, errors = discover(args.tasks)
    if errors:
        raise HeldoutError(f"--tasks: {errors[0]}")
    if not files:
        raise HeldoutError(f"--tasks {' '.join(args.tasks)}: no task files there")
    names = [f.stem for f in files]
    if len(set(names)) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise HeldoutError(f"--tasks: two tasks named {twice[0]}; evaluate them apart")
    targets = {f.stem: TargetSpec("kernelbench", baselines, args.objective, args.rounds, args.hang_timeout, str(out),
                                  task_path=str(f.resolve()), device=args.device).to_json() for f in files}
    prompter = Prompter(None, detect(None).describe(), fmt=args.prompt_format)
    return Items("task", names, targets, lambda name, earlier: prompter.render(prompter.messages(targets[name])))


def reference_candidate(task_path: str) -> str:
    """The task's own Model as a completion (ModelNew = Model renamed, in the fenced file a policy would write)."""
    return answer_text(re.sub(r"\bModel\b", "ModelNew", Path(task_path).read_text()), "python")


# -- the methods' specs --------------------------------------------------------------------------------------------
def random_spec(rng: random.Random) -> str:
    """A uniform random spec: a random family, each writable knob a uniform value of its list."""
    family = rng.choice(SPEC_FAMILIES)
    knobs = {k: rng.choice(SPACES[family].knobs[k]) for k in writable_knobs(family)}
    return Spec(family, tuple(sorted(knobs.items()))).text


def cost_model_spec(shape: str, acc: str) -> str | None:
    """The cost model's first pick among the default-grid points of the spec families that run the shape."""
    problem = parse_shapes(shape, acc=acc)[0]
    points = [v for f in SPEC_FAMILIES for v in SPACES[f].points(acc) if SPACES[f].runs(v, problem) is None]
    ranked = rank(points, problem)
    return spec_of(ranked[0][1]).text if ranked else None


def prompt_of(shape: str, acc: str, fmt: str, earlier: Sequence[tuple[str, str]] = ()):
    messages = prompt_messages(shape, acc, list(earlier))
    return to_text(messages) if fmt == "text" else messages


class Policy:
    """A saved causal LM (on cuda when there is one), loaded once and sampled turn after turn."""

    def __init__(self, folder: Path, temperature: float = 1.0, max_new_tokens: int = 40):
        # transformers (the rl extra's), and the train modules that load it, only when a policy is sampled: random
        # specs and the cost model's pick are scored without them
        from transformers import AutoModelForCausalLM
        from kernelrl.train.modeling import load_tokenizer
        from kernelrl.train.sampling import HFSampler

        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        tok = load_tokenizer(str(folder))
        self.model = AutoModelForCausalLM.from_pretrained(str(folder)).to(self.device)
        self.sampler = HFSampler(self.model, tok, max_new_tokens, temperature=temperature)

    def sample(self, prompts: list, n: int) -> list[list[str]]:
        return self.sampler.sample(prompts, n)

    def close(self) -> None:
        del self.model, self.sampler
        if self.device == "cuda":
            torch.cuda.empty_cache()


def earlier_of(rows: list[dict], top_k: int, negatives: int, rng: random.Random) -> list[tuple[str, str]]:
    """What a contrastive prompt shows of a method's earlier samples on a shape, as training shows a run's
    population (kernelrl/train/specs.py shown_variants); a failure's outcome is its verdict key (its category where
    no key was given)."""
    return shown_variants([(r["spec"], r["speedup"]) for r in rows if r["verified"] and r["speedup"]],
                          [(r["spec"], f"failed ({r.get('key') or r['category'] or 'failed'})")
                           for r in rows if not r["verified"]], top_k, negatives, rng)


def turn_sizes(k: int, turns: int) -> list[int]:
    """k samples over `turns` turns, as evenly as they go (the first turns take the remainder)."""
    return [k // turns + (i < k % turns) for i in range(turns) if k // turns + (i < k % turns)]


# -- scoring -------------------------------------------------------------------------------------------------------
def shown_spec(text: str) -> str:
    """The canonical spec text; for a code completion "code" and its digest (the file itself is kept apart); else
    the completion's first line."""
    try:
        return parse_spec(text).text
    except SpecError:
        if "```" in text:
            return f"code {hashlib.sha256(text.encode()).hexdigest()[:12]}"
        return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:200]


def keep_completions(folder: Path, rows: list[dict]) -> None:
    """Each sampled code completion as a file, method/item/sample.txt: what heldout.csv's digest names."""
    for r in rows:
        if r.get("turn") != "confirm":
            path = folder / r["method"] / r["shape"] / f"{r['sample']}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(r["text"])


def score_shapes(samples: dict[str, dict[str, list[str]]], shapes: list[str], target_of, service, turn=0,
                 first: dict[str, int] | None = None) -> list[dict]:
    """samples: method -> shape -> texts. One score call per shape over every method's texts; one row a sample,
    numbered from `first[method]` (the samples of earlier turns)."""
    rows = []
    for shape in shapes:
        items = [(m, i, t) for m, by_shape in samples.items() for i, t in enumerate(by_shape.get(shape, []))]
        if not items:
            continue
        target = target_of(shape)
        results = service.score([(target, t) for _, _, t in items])
        for (method, i, text), r in zip(items, results):
            rows.append({"method": method, "shape": shape, "sample": (first or {}).get(method, 0) + i,
                         "turn": turn, "spec": shown_spec(text), "text": text, "verified": r.ok,
                         "verdict": r.verdict or r.category, "category": r.category, "key": r.key,
                         "speedup": r.speedup if r.ok and r.speedup and math.isfinite(r.speedup) else None})
    return rows


def confirm_rows(rows: list[dict], shapes: list[str], target_of, service) -> list[dict]:
    """Every method's best verified spec of each shape measured again, all of a shape's in one call: the best of k
    samples each measured once is biased upwards by its own noise (the more samples, the more), so best.csv and the
    summary read the confirmation instead, for every method alike. A best spec that fails its confirmation is
    reported as failed."""
    best = {(b["method"], b["shape"]): b for b in _sample_bests(rows)}
    picks = {m: {s: [b["text"]] for (mm, s), b in best.items() if mm == m}
             for m in dict.fromkeys(r["method"] for r in rows)}
    return score_shapes(picks, shapes, target_of, service, turn="confirm")


# -- what the rows say ---------------------------------------------------------------------------------------------
def _sample_bests(rows: list[dict]) -> list[dict]:
    """Per (method, shape) with a verified sample, its fastest sample's row."""
    best: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["method"], r["shape"])
        if r.get("turn") != "confirm" and r["verified"] and r["speedup"] and \
                (key not in best or r["speedup"] > best[key]["speedup"]):
            best[key] = r
    return list(best.values())


def best_rows(rows: list[dict]) -> list[dict]:
    """Per (method, shape): the best verified speedup of its samples, or its confirmation where one was measured."""
    confirmed = any(r.get("turn") == "confirm" for r in rows)
    best: dict[tuple[str, str], float | None] = {}
    for r in rows:
        key = (r["method"], r["shape"])
        s = r["speedup"] if r["verified"] and (r.get("turn") == "confirm") == confirmed else None
        best[key] = max(filter(None, (best.get(key), s)), default=None)
    return [{"method": m, "shape": s, "speedup_vs_cublas": v, "verified": v is not None} for (m, s), v in best.items()]


def summarize(rows: list[dict]) -> dict:
    """Per method: fast_p, best-of-k geomean, ratio to cost_model, spread over samples, verdicts, cheats."""
    best = {(b["method"], b["shape"]): b["speedup_vs_cublas"] for b in best_rows(rows)}
    methods = list(dict.fromkeys(r["method"] for r in rows))
    out = {}
    for m in methods:
        mine = [r for r in rows if r["method"] == m and r.get("turn") != "confirm"]
        shapes = list(dict.fromkeys(r["shape"] for r in mine))
        bests = {s: best[(m, s)] for s in shapes}
        won = [v for v in bests.values() if v is not None]
        shared = [s for s in shapes if bests[s] is not None and best.get(("cost_model", s)) is not None]
        per_sample = collections.defaultdict(list)  # sample index -> its verified speedups over shapes
        per_shape = collections.defaultdict(list)
        for r in mine:
            if r["verified"] and r["speedup"]:
                per_sample[r["sample"]].append(r["speedup"])
                per_shape[r["shape"]].append(r["speedup"])
        sample_geo = [g for g in (geomean(v) for v in per_sample.values()) if g]
        tricks = [trick_of(r.get("text", r["spec"])) for r in mine]
        out[m] = {
            "shapes": len(shapes), "samples": len(mine),
            **{f"fast_{p:g}": sum(v is not None and v >= p for v in bests.values()) / (len(shapes) or 1)
               for p in FAST_P},
            "geomean_best": geomean(won), "verified_shapes": len(won),
            "vs_cost_model": geomean(bests[s] / best[("cost_model", s)] for s in shared) if m != "cost_model"
            and shared else None, "cost_model_shared_shapes": len(shared) if m != "cost_model" else None,
            "sample_geomean_mean": statistics.fmean(sample_geo) if sample_geo else None,
            "sample_geomean_std": statistics.pstdev(sample_geo) if len(sample_geo) > 1 else None,
            "median_over_best": geomean(statistics.median(v) / max(v) for v in per_shape.values()),
            "verdicts": dict(collections.Counter(r["category"] for r in mine)),
            "cheat_rate": sum(t is not None for t in tricks) / (len(mine) or 1),
            "cheats_verified": sum(t is not None and r["verified"] for t, r in zip(tricks, mine)),
        }
    return out


def _f(x, fmt="{:.3f}") -> str:
    return "-" if x is None else fmt.format(x)


def table_lines(summary: dict) -> list[str]:
    head = ["method", "fast_0", "fast_1", "fast_1.1", "fast_1.25", "geomean best (shapes)", "vs cost_model",
            "sample geomean std", "median/best", "cheat rate", "cheats verified"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m, s in summary.items():
        cells = [m] + [_f(s[f"fast_{p:g}"], "{:.2f}") for p in FAST_P] + [
            f"{_f(s['geomean_best'])} ({s['verified_shapes']}/{s['shapes']})",
            _f(s["vs_cost_model"]) + (f" ({s['cost_model_shared_shapes']})" if s["vs_cost_model"] else ""),
            _f(s["sample_geomean_std"]), _f(s["median_over_best"]), _f(s["cheat_rate"], "{:.2f}"),
            str(s["cheats_verified"])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


CSV_COLUMNS = ["method", "shape", "sample", "turn", "spec", "verified", "verdict", "category", "speedup_vs_baseline"]


def append_rows(path: Path, rows: list[dict], item: str = "shape") -> None:
    """Add an item's rows to heldout.csv as soon as they are measured: a run stopped at any point keeps every item
    it finished, and --resume goes on from there. `item` names the second column: shape or task."""
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.writer(fh)
        if new:
            w.writerow([item if c == "shape" else c for c in CSV_COLUMNS])
        for r in rows:
            w.writerow([r["method"], r["shape"], r["sample"], r.get("turn", 0), r["spec"], int(r["verified"]),
                        r["verdict"], r.get("category") or "", "" if r["speedup"] is None else f"{r['speedup']:.4f}"])


def read_rows(path: Path) -> list[dict]:
    """heldout.csv's rows as run_heldout keeps them (a row's text is its spec; its item under "shape")."""
    with open(path, newline="") as fh:
        rows = [{("shape" if k == "task" else k): v for k, v in r.items()} for r in csv.DictReader(fh)]
    if rows and set(CSV_COLUMNS) - set(rows[0]):
        raise HeldoutError(f"--resume: {path} was written by another version (no column "
                           f"{', '.join(sorted(set(CSV_COLUMNS) - set(rows[0])))}); give another --out")
    return [{"method": r["method"], "shape": r["shape"], "sample": int(r["sample"]),
             "turn": r["turn"] if r["turn"] == "confirm" else int(r["turn"]), "spec": r["spec"], "text": r["spec"],
             "verified": r["verified"] == "1", "verdict": r["verdict"], "category": r["category"],
             "speedup": float(r["speedup_vs_baseline"]) if r["speedup_vs_baseline"] else None} for r in rows]


def write_outputs(out: Path, rows: list[dict], summary: dict, settings: dict, item: str = "shape") -> None:
    """best.csv, summary.json and summary.md (heldout.csv grows item by item, append_rows). best.csv's speedup
    column keeps its name for shapes (speedup_vs_cublas) and names the objective for tasks."""
    out.mkdir(parents=True, exist_ok=True)
    speed = "speedup_vs_cublas" if item == "shape" else f"speedup_vs_{settings['objective']}"
    with open(out / "best.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["method", item, speed, "verified"])
        for b in best_rows(rows):
            v = b["speedup_vs_cublas"]
            w.writerow([b["method"], b["shape"], "" if v is None else f"{v:.4f}", int(b["verified"])])
    (out / "summary.json").write_text(json.dumps({"settings": settings, "methods": summary}, indent=2) + "\n")
    md = [f"# Held-out evaluation: {len(settings[item + 's'])} {item}s, k={settings['k']}, speedup over "
          f"{settings['objective']} ({settings['runner']} runner)", ""] + table_lines(summary) + [
          "", f"fast_p: share of {item}s whose best verified sample is at least p x the objective (fast_0: any "
          "verified). vs cost_model: geomean ratio of best-of-k on the shapes both verified."]
    if settings.get("missing"):
        md += ["", f"Not measured (the run stopped first): {', '.join(settings['missing'])}."]
    md += ["", "## Verdicts", ""]
    md += [f"- {m}: " + ", ".join(f"{c} {n}" for c, n in sorted(s["verdicts"].items())) for m, s in summary.items()]
    (out / "summary.md").write_text("\n".join(md) + "\n")


def _shown(rows: list[dict], method: str, shape: str, turn: int, args) -> list[tuple[str, str]]:
    mine = [r for r in rows if r["method"] == method and r["shape"] == shape]
    return earlier_of(mine, args.top_k, args.negatives, random.Random(f"{args.seed}|{method}|{shape}|{turn}"))


def evaluate_item(name: str, items: Items, policies: dict, builtin: dict, sizes: list[int], contrastive: set,
                  service, args) -> list[dict]:
    """One shape or task, whole: every turn (the built-in methods' samples in the first), one measurement each,
    then the confirmation of every method's best."""
    rows: list[dict] = []
    target_of = items.targets.__getitem__
    for turn, n in enumerate(sizes):
        samples = {m: {name: v[name]} for m, v in builtin.items() if name in v} if turn == 0 else {}
        for method, policy in policies.items():
            earlier = _shown(rows, method, name, turn, args) if method in contrastive else ()
            samples[method] = {name: policy.sample([items.prompt(name, earlier)], n)[0]}
        rows += score_shapes(samples, [name], target_of, service, turn,
                             collections.Counter(r["method"] for r in rows))
    if args.confirm:
        rows += confirm_rows(rows, [name], target_of, service)
    return rows


def builtin_methods(args, items: Items) -> dict[str, dict[str, list[str]]]:
    """The methods that are not policies: random specs and the cost model's pick (shapes), the reference (tasks)."""
    builtin: dict[str, dict[str, list[str]]] = {}
    if items.kind == "task":
        if args.random or args.cost_model:
            raise HeldoutError("--random and --cost-model write HGEMM specs; with --tasks use --reference")
        if args.reference:
            builtin["reference"] = {n: [reference_candidate(json.loads(items.targets[n])["task_path"])]
                                    for n in items.names}
        return builtin
    if args.reference:
        raise HeldoutError("--reference needs --tasks (shapes have the cost model's pick: --cost-model)")
    if args.random:
        rng = random.Random(args.seed)
        builtin["random"] = {s: [random_spec(rng) for _ in range(args.random)] for s in items.names}
    if args.cost_model:
        builtin["cost_model"] = {s: [t] for s in items.names if (t := cost_model_spec(s, args.acc))}
    return builtin


# -- the whole run -------------------------------------------------------------------------------------------------
def run_heldout(args, service=None, say=print) -> dict:
    """args: the parsed `train eval` options. service: a RewardService to score with (default: a local one)."""
    tasks = bool(args.tasks)
    baselines = baselines_of(args)
    if args.objective not in baselines:
        raise HeldoutError(f"--objective {args.objective} is not one of --baselines {','.join(baselines)}")
    if args.runner == "recorded" and not args.recorded:
        raise HeldoutError("--runner recorded needs --recorded TABLE")
    if args.k < 1 or args.random < 0:
        raise HeldoutError("--k must be at least 1 and --random at least 0")
    out = Path(args.out)
    items = task_items(args, baselines, out) if tasks else shape_items(args, baselines, out)
    policies = parse_policies(args.policy)
    contrastive = set(args.contrastive or [])
    if contrastive - set(policies):
        raise HeldoutError(f"--contrastive {', '.join(sorted(contrastive - set(policies)))}: not a --policy name")
    if contrastive and tasks:
        raise HeldoutError("--contrastive: contrastive turns are for spec policies on shapes, not --tasks")
    if args.turns < 1 or args.turns > args.k:
        raise HeldoutError(f"--turns {args.turns}: give 1 to --k ({args.k}) turns")
    builtin = builtin_methods(args, items)
    if not policies and not builtin:
        raise HeldoutError("train eval: nothing to evaluate: give --policy NAME=DIR, or --random N / --cost-model "
                           "(shapes), --reference (tasks)")
    sizes = turn_sizes(args.k, args.turns)
    per_item = max(len(policies) * sizes[0] + sum(len(v.get(n, [])) for v in builtin.values()) for n in items.names)
    own = service is None
    service = service or RewardService(EvalSettings(batch_size=max(per_item, 1), timeout_s=args.timeout),
                                       RewardConfig())
    methods = list(policies) + list(builtin)
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "heldout.csv"
    rows = read_rows(csv_path) if args.resume and csv_path.exists() else []
    if rows and set(r["method"] for r in rows) != set(methods):
        raise HeldoutError(f"--resume: {csv_path} holds the methods {', '.join(sorted({r['method'] for r in rows}))}, "
                           f"this run has {', '.join(sorted(methods))}; give the same ones or another --out")
    if not args.resume:
        csv_path.unlink(missing_ok=True)
    done = {r["shape"] for r in rows}
    if done:
        say(f"resuming: {len(done)} of {len(items.names)} {items.kind}s already in {csv_path}")
    loaded: dict[str, Policy] = {}
    try:
        torch.manual_seed(args.seed)
        for name, folder in policies.items():
            note = " (contrastive prompts after the first turn)" if name in contrastive else ""
            say(f"loading {name} ({folder}){note}")
            loaded[name] = Policy(folder, args.temperature, args.max_new_tokens)
        say(f"{len(methods)} methods, {args.k} samples per policy in {len(sizes)} turn(s)"
            f"{', confirmed' if args.confirm else ''}, on {len(items.names)} {items.kind}s ({args.runner} runner)")
        for i, name in enumerate(items.names):
            if name in done:
                continue
            mine = evaluate_item(name, items, loaded, builtin, sizes, contrastive, service, args)
            append_rows(csv_path, mine, items.kind)
            if tasks:
                keep_completions(out / "completions", mine)
            rows += mine
            best = {b["method"]: b["speedup_vs_cublas"] for b in best_rows(mine)}
            say(f"{items.kind} {i + 1}/{len(items.names)} {name}: "
                + ", ".join(f"{m} {_f(best.get(m), '{:.2f}')}" for m in methods))
    finally:
        for policy in loaded.values():
            policy.close()
        if own:
            service.close()
    summary = summarize(rows)
    write_outputs(out, rows, summary, settings_of(args, items.kind, items.names, policies, contrastive, baselines),
                  items.kind)
    return summary


def baselines_of(args) -> tuple[str, ...]:
    """--baselines and --objective with their defaults filled in (eager for tasks, cuBLAS for shapes)."""
    args.baselines = args.baselines or ("eager" if args.tasks else "cublas_nn,torch")
    args.objective = args.objective or ("eager" if args.tasks else "cublas_nn")
    return tuple(b.strip() for b in args.baselines.split(",") if b.strip())


def settings_of(args, kind: str, names: list[str], policies: dict, contrastive: set, baselines: tuple) -> dict:
    """What summary.json records of a run: its items, methods and measuring options."""
    return {f"{kind}s": names, "k": args.k, "turns": args.turns, "contrastive": sorted(contrastive),
            "top_k": args.top_k, "negatives": args.negatives, "confirm": bool(args.confirm),
            "random": args.random, "cost_model": bool(args.cost_model), "reference": bool(args.reference),
            "policies": {n: str(p) for n, p in policies.items()}, "acc": args.acc, "baselines": list(baselines),
            "objective": args.objective, "runner": args.runner, "seed": args.seed,
            "temperature": args.temperature, "max_new_tokens": args.max_new_tokens,
            "prompt_format": args.prompt_format}


def report_heldout(args, say=print) -> dict:
    """`train eval --report`: the summaries of what DIR/heldout.csv holds, measuring nothing (a run stopped by its
    time limit keeps its finished shapes but wrote no summary). The shapes of --split/--shapes it lacks are named in
    summary.json's `missing` and said; the options given are recorded as the run's settings."""
    out = Path(args.out)
    csv_path = out / "heldout.csv"
    if not csv_path.exists():
        raise HeldoutError(f"--report: no {csv_path}; give the --out of a held-out run")
    rows = read_rows(csv_path)
    if not rows:
        raise HeldoutError(f"--report: {csv_path} holds no rows; nothing was measured")
    kind = "task" if args.tasks else "shape"
    names = list(dict.fromkeys(r["shape"] for r in rows))
    wanted = [] if args.tasks else (load_shapes(args.shapes, args.split, args.acc) if args.shapes or args.split
                                    else [])
    measured = set(names)
    missing = [n for n in wanted if n not in measured]
    if missing:
        say(f"--report: {len(missing)} of {len(wanted)} {kind}s were not measured: {', '.join(missing)}")
    baselines = baselines_of(args)
    policies = {name: Path(folder) for name, _, folder in (p.partition("=") for p in args.policy)}
    settings = settings_of(args, kind, names, policies, set(args.contrastive or []), baselines)
    settings.update(missing=missing, report_only=True)
    summary = summarize(rows)
    write_outputs(out, rows, summary, settings, kind)
    return summary
