"""Training data: prompts for KernelBench-format tasks and HGEMM shape groups, contrastive context from the run's
population, and SFT pairs from verified kernels, as `datasets.Dataset` objects TRL takes.

Prompts are the LLM proposer's (kernelrl/evolve/prompts.py): the task, the GPU, earlier variants with their
measured speedups, ptxas reports and profiles, failed variants with their verdicts, and the instruction to analyse
before writing code. During RL the prompt of a row is rendered when the row is drawn, from the run's population
(kernelrl/evolve/population.py), into which every judged completion is recorded: later prompts show what the
policy wrote earlier and how fast it was, which is CUDA-L1's contrastive RL. Rendering is a pure function of (row,
population version), so the completions of one GRPO group always share their prompt.

SFT pairs come from (a) an evolve population's verified candidates, with the very context they were written in
(parent and inspirations) and their analysis; (b) a results database of `kernelrl bench`/`tune` runs and the .cu
files it measured (say a tuned library's kernels/): the shapes where a kernel verified; (c) seed files, verified
by the reward service before use."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from pathlib import Path

from kernelrl.db import Database
from kernelrl.evolve.population import Population
from kernelrl.evolve.prompts import PromptBuilder
from kernelrl.train.multiturn import prompt_key
from kernelrl.evolve.sampling import pick_inspirations, pick_negatives, pick_parent
from kernelrl.kernelbench.tasks import discover
from kernelrl.train.errors import TrainError
from kernelrl.train.targets import TargetSpec, make_target
from kernelrl.workloads.hgemm import parse_shapes

ANSWER_CUE = "\n\n## Answer\n\n"  # text format: where the prompt ends and the completion starts


# -- targets from the configuration ------------------------------------------------------------------------------
def hgemm_specs(data, work_dir: str | Path) -> list[TargetSpec]:
    """Shape groups of `shapes_per_prompt`, in the shape set's order: one target (and one reward) per group."""
    problems = parse_shapes(data.shapes, acc=data.acc)
    per = data.shapes_per_prompt
    return [TargetSpec("hgemm", tuple(data.baselines), data.objective, data.rounds, data.hang_timeout_s,
                       str(work_dir), shapes=tuple(p.name for p in problems[i:i + per]), acc=data.acc,
                       runner=data.runner, arch=data.arch, completion=data.completion,
                       recorded=str(data.recorded or "")) for i in range(0, len(problems), per)]


def kernelbench_specs(data, work_dir: str | Path) -> list[TargetSpec]:
    files, errors = discover(data.tasks)
    if errors:
        raise TrainError(f"data.kernelbench.tasks: {errors[0]}")
    if not files:
        raise TrainError("data.kernelbench.tasks: no task files found")
    return [TargetSpec("kernelbench", tuple(data.baselines or ()), data.objective, data.rounds, data.hang_timeout_s,
                       str(work_dir), task_path=str(f), device=data.device, own_kernels=data.own_kernels)
            for f in files]


def specs_for(name: str, data, work_dir: str | Path, rl: bool = False) -> list[TargetSpec]:
    """The targets of one dataset; `rl`: those of GRPO's prompts (data.hgemm.rl_shapes where given)."""
    if name == "hgemm":
        hgemm = data.hgemm
        if rl and hgemm.rl_shapes:
            hgemm = replace(hgemm, shapes=hgemm.rl_shapes)
        return hgemm_specs(hgemm, work_dir)
    return kernelbench_specs(data.kernelbench, work_dir)


# -- prompts -------------------------------------------------------------------------------------------------------
def to_text(messages: list[dict]) -> str:
    """A chat prompt as plain text, for base models without a chat template."""
    return "\n\n".join(m["content"].rstrip() for m in messages) + ANSWER_CUE


def answer_text(code: str, fence: str, analysis: str = "") -> str:
    """What the model should write: the analysis first, then one fenced file (the format prompts ask for)."""
    head = analysis.strip() + "\n\n" if analysis.strip() else ""
    return f"{head}```{fence}\n{code.rstrip()}\n```\n"


class Prompter:
    """Renders prompts for targets, with context drawn from the run's population."""

    def __init__(self, population, hardware_text: str, top_k: int = 4, negatives: int = 3,
                 max_chars: int = 60000, fmt: str = "chat", seed: int = 0, fit=None):
        self.pop = population
        self.hardware_text = hardware_text
        self.top_k, self.negatives, self.max_chars, self.fmt, self.seed = top_k, negatives, max_chars, fmt, seed
        self.fit = fit  # an evolve.prompts.ContextFit: prompts sized in the policy's tokens (data.context_tokens)
        self.rendered: dict[str, str] = {}  # an RL row's rendered prompt -> its target (multiturn.prompt_key)
        self._targets: dict[str, object] = {}

    def target(self, spec_json: str):
        if spec_json not in self._targets:
            self._targets[spec_json] = make_target(TargetSpec.from_json(spec_json))
        return self._targets[spec_json]

    def builder(self, spec_json: str):
        return PromptBuilder(self.target(spec_json), self.hardware_text, self.max_chars, self.fit)

    def messages(self, spec_json: str, variant: int = 0) -> list[dict]:
        """A contrastive prompt: a parent to improve, inspirations, negatives; the first-attempt prompt when the
        target has no verified variant yet."""
        builder = self.builder(spec_json)
        done = [c for c in self.pop.all(self.target(spec_json).key) if c.status == "done"] if self.pop else []
        digest = hashlib.sha256(f"{self.seed}|{spec_json}|{variant}|{len(done)}".encode()).hexdigest()
        rng = random.Random(int(digest[:16], 16))  # the same row and population give the same prompt
        parent = pick_parent(done, rng)
        inspirations = pick_inspirations(parent, done, done, self.top_k - 1, rng) if parent else []
        negatives = pick_negatives([c for c in done if not c.ok], self.negatives)
        return builder.propose(parent, inspirations, negatives)

    def render(self, messages: list[dict]):
        return messages if self.fmt == "chat" else to_text(messages)


def rl_dataset(specs: list[TargetSpec], prompter: Prompter, per_target: int, shuffle_seed: int = 0,
               order: str = "shuffled"):
    """Rows (target, variant), `per_target` per target, shuffled, or for order "cycle" every target in turn (all
    targets' variant 0, then variant 1, ...; the trainer must then not shuffle); the prompt column is rendered when
    a row is read (see the module's docstring)."""
    from datasets import Dataset
    if order == "cycle":
        rows = [{"target": s.to_json(), "kind": s.kind, "variant": v} for v in range(per_target) for s in specs]
    else:
        rows = [{"target": s.to_json(), "kind": s.kind, "variant": v} for s in specs for v in range(per_target)]
        random.Random(shuffle_seed).shuffle(rows)
    ds = Dataset.from_list(rows)

    def render(batch):
        prompts = [prompter.render(prompter.messages(t, v)) for t, v in zip(batch["target"], batch["variant"])]
        for prompt, spec in zip(prompts, batch["target"]):
            prompter.rendered[prompt_key(prompt)] = spec  # a multi-turn rollout sees prompts only
        return {**batch, "prompt": prompts}

    ds.set_transform(render)
    return ds


def prompt_rows(specs: list[TargetSpec], prompter: Prompter, per_target: int = 1) -> list[dict]:
    """Fixed prompts (rendered now): for sampling in the self-supervised rounds."""
    rows = []
    for s in specs:
        for v in range(per_target):
            messages = prompter.messages(s.to_json(), v)
            rows.append({"target": s.to_json(), "kind": s.kind, "messages": messages,
                         "prompt": prompter.render(messages)})
    return rows


# -- SFT pairs -----------------------------------------------------------------------------------------------------
@dataclass
class Pair:
    spec: str  # TargetSpec JSON
    messages: list  # the prompt
    completion: str
    origin: str  # population, results_db, seed, self_supervised
    verified: bool = True  # seeds are checked by the reward service before use


def sft_dataset(pairs: list[Pair], fmt: str = "chat", shuffle_seed: int = 0):
    """prompt/completion rows: SFTTrainer trains on the completion only."""
    from datasets import Dataset
    rows: list[dict] = []
    for p in pairs:
        if fmt == "chat":
            rows.append({"prompt": p.messages, "completion": [{"role": "assistant", "content": p.completion}]})
        else:
            rows.append({"prompt": to_text(p.messages), "completion": p.completion})
    random.Random(shuffle_seed).shuffle(rows)
    return Dataset.from_list(rows)


def import_population(src_path: str | Path, pop, specs: list[TargetSpec]) -> int:
    """Copy the judged candidates of an evolve population into the run's population, under the keys of the run's
    targets: the same KernelBench task, or the HGEMM shape set (same accumulator) sharing the most shapes."""
    src = Population(src_path)
    keys = [r[0] for r in src.conn.execute("SELECT DISTINCT target FROM evolve_candidates")]
    copied = 0
    for spec in specs:
        target = make_target(spec)
        if pop.state(target.key, "imported"):
            continue
        match = _matching_key(spec, target, keys, src)
        for c in (src.all(match) if match else []):
            if c.status != "done":
                continue
            new, fresh = pop.add(target.key, c.source, c.origin, 0, name=c.name, analysis=c.analysis, model=c.model)
            if fresh:
                pop.record(new.id, c.category, c.verdict, c.score, c.speedups, c.detail, c.resources, c.key)
                if c.profile:
                    pop.set_profile(new.id, c.profile)
                copied += 1
        pop.set_state(target.key, "imported", True)
    src.close()
    return copied


def _matching_key(spec: TargetSpec, target, keys: list[str], src) -> str | None:
    if spec.kind == "kernelbench":
        same = [k for k in keys if k == target.key] or [k for k in keys if k.startswith(f"kb:{target.task.name}:")]
        return same[0] if same else None
    wanted, best, best_overlap = set(spec.shapes), None, 0
    for k in keys:
        if not k.startswith(f"hgemm:{spec.acc}:"):
            continue
        shapes = {s for c in src.all(k) for s in c.detail}
        overlap = len(shapes & wanted)
        if overlap > best_overlap:
            best, best_overlap = k, overlap
    return best


def population_pairs(src_path: str | Path, data, work_dir: str | Path, prompter: Prompter) -> list[Pair]:
    """Verified candidates of an evolve population, each with the prompt it was written from (its parent and
    inspirations as context) and its analysis; seeds (no analysis, no context) too."""
    src = Population(src_path)
    tasks = {make_target(s).task.name: s for s in kernelbench_specs(data.kernelbench, work_dir)} \
        if data.kernelbench else {}
    pairs = []
    keys = [r[0] for r in src.conn.execute("SELECT DISTINCT target FROM evolve_candidates")]
    for key in keys:
        for c in src.best(key):
            if c.score is None or c.score < data.min_speedup:
                continue
            spec = _spec_of(key, c, data, work_dir, tasks)
            if spec is None:
                continue
            builder = prompter.builder(spec.to_json())
            parent = src.get(c.parent) if c.parent else None
            inspirations = [src.get(i) for i in c.inspirations]
            pairs.append(Pair(spec.to_json(), builder.propose(parent, inspirations, []),
                              answer_text(c.source, builder.target.fence, c.analysis), "population"))
    src.close()
    return pairs


def _spec_of(key: str, c, data, work_dir, tasks: dict) -> TargetSpec | None:
    if key.startswith("kb:"):
        return tasks.get(key.split(":")[1])
    if key.startswith("hgemm:") and data.hgemm is not None and c.detail:
        h = data.hgemm
        return TargetSpec("hgemm", tuple(h.baselines), h.objective, h.rounds, h.hang_timeout_s, str(work_dir),
                          shapes=tuple(c.detail), acc=key.split(":")[1], runner=h.runner, arch=h.arch)
    return None


def results_db_pairs(db_path: str | Path, kernel_paths: list[str], data, work_dir: str | Path,
                     prompter: Prompter) -> list[Pair]:
    """Kernels measured by `kernelrl bench` or `tune` (method name = file stem): each becomes one pair, its prompt
    the HGEMM task on the shapes (up to shapes_per_prompt) where it verified and beat the objective most."""
    h = data.hgemm
    if h is None:
        raise TrainError("data.results_db pairs are HGEMM kernels: define data.hgemm too")
    objective = h.objective or h.baselines[0]
    files = [f for p in map(Path, kernel_paths) for f in (sorted(p.glob("*.cu")) if p.is_dir() else [p])]
    db = Database(db_path)
    rows = db.rows(modes=["device"], superseded=True)
    db.close()
    # A speedup pairs a kernel's time with the objective's time of the same run only (measured side by side).
    times: dict[tuple, float] = {}
    for r in rows:
        if r["verified"] and r["time_us_median"] and r["acc"] == h.acc:
            times[(r["gpu"], f"{r['m']}x{r['n']}x{r['k']}", r["run_id"], r["method"])] = r["time_us_median"]
    pairs = []
    for f in files:
        speed: dict[str, float] = {}  # shape -> the file's best speedup on it
        for (gpu, shape, run, method), us in times.items():
            base = times.get((gpu, shape, run, objective))
            if method == f.stem and base:
                speed[shape] = max(speed.get(shape, 0.0), base / us)
        chosen = sorted((s for s in speed if speed[s] >= data.min_speedup), key=lambda s: -speed[s])
        if not chosen:
            continue
        spec = TargetSpec("hgemm", tuple(h.baselines), h.objective, h.rounds, h.hang_timeout_s, str(work_dir),
                          shapes=tuple(sorted(chosen[:h.shapes_per_prompt])), acc=h.acc, runner=h.runner,
                          arch=h.arch)
        builder = prompter.builder(spec.to_json())
        pairs.append(Pair(spec.to_json(), builder.propose(None, [], []),
                          answer_text(f.read_text(errors="replace"), "cuda"), "results_db"))
    return pairs


def seed_pairs(seed_paths: list[str], specs: list[TargetSpec], prompter: Prompter) -> list[Pair]:
    """Seed files (folders expanded) paired with targets that take them: a .py with its KernelBench task, a .cu
    with the HGEMM targets in turn. Unverified: the pipeline has the reward service judge them first."""
    files = [f for p in map(Path, seed_paths) for f in (sorted(x for x in p.iterdir() if x.suffix in (".cu", ".py")
                                                               and not x.name.startswith("_"))
                                                        if p.is_dir() else [p])]
    pairs, turn = [], 0
    hgemm = [s for s in specs if s.kind == "hgemm"]
    for f in files:
        if f.suffix == ".cu":
            owners = [hgemm[turn % len(hgemm)]] if hgemm else []
            turn += 1
        else:
            owners = [s for s in specs if s.kind == "kernelbench" and prompter.target(s.to_json()).seed_matches(f)]
        for spec in owners:
            builder = prompter.builder(spec.to_json())
            pairs.append(Pair(spec.to_json(), builder.propose(None, [], []),
                              answer_text(f.read_text(errors="replace"), builder.target.fence), "seed",
                              verified=False))
    return pairs
