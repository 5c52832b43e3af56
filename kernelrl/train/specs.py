"""Completions that are kernel specs (kernelrl/space/spec.py): prompts for them, their sources, and what a batch
of them says about a policy.

A spec target (`data.hgemm.completion: spec`) asks for one line of text naming a family point. The reward service
renders it into a candidate source in the training process (cheap), so the evaluator judges exactly what it
judges for a hand-written file; a spec that does not parse or that its family rejects gets its verdict here, with
one line, and reward 0. Prompts are short, as a small policy trained from scratch needs: the shape, then (in
contrastive mode) earlier specs for that shape with their measured speedups or verdicts, best first."""

from __future__ import annotations

import csv
import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from kernelrl.evolve.extract import extract
from kernelrl.harness.verdicts import Verdict
from kernelrl.evolve.target import geomean
from kernelrl.space.learned import variants_by_name
from kernelrl.space.spec import (SPEC_FAMILIES, TRICKS, Spec, SpecError, SpecRejected, parse_spec, spec_of,
                                 spec_text_of, spec_words)
from kernelrl.train.datasets import Pair, Prompter
from kernelrl.train.reward import Judgement, RewardResult
from kernelrl.train.targets import TargetSpec


def completion_code(spec: TargetSpec, text: str) -> tuple[str | None, Judgement | None]:
    """(the candidate source, None), or (None, the verdict) when the completion holds no usable candidate."""
    if spec.completion == "spec":
        try:
            return parse_spec(text).source(spec.acc), None
        except SpecError as exc:
            return None, Judgement("malformed", str(exc), spec.objective or "", key=exc.verdict.value)
        except SpecRejected as exc:
            return None, Judgement("failed", str(exc), spec.objective or "", key=exc.verdict.value)
    ex = extract(text, *spec.entry)
    if not ex.ok:
        assert ex.key is not None  # no usable code: malformed
        return None, Judgement("malformed", ex.verdict, spec.objective or "", code_chars=0, key=ex.key.value)
    return ex.code, None


def trick_of(text: str) -> str | None:
    """The cheat a completion asks for (None: none, or no spec at all)."""
    try:
        return parse_spec(text).trick
    except SpecError:
        return None


PAPER_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384)


def vocabulary() -> list[str]:
    """Whole-word tokens for a policy trained from scratch: every spec word, the paper grid's shape words and the
    prompts' own words (anything else is spelled in bytes)."""
    shapes = [f" {d}={v}" for d in "MNK" for v in PAPER_SIZES]
    return spec_words() + shapes + ["hgemm", " fp32", " fp16", "earlier:", " ->", " failed", "\n"]


def shape_words(shape: str, acc: str) -> str:
    m, n, k = shape.split("x")
    return f"hgemm {acc} M={m} N={n} K={k}"


def prompt_text(shape: str, acc: str, earlier: list[tuple[str, str]]) -> str:
    """The whole prompt: the task line, earlier (spec, outcome) lines, and the cue for the answer."""
    return "\n".join([shape_words(shape, acc)] + [f"earlier: {s} -> {outcome}" for s, outcome in earlier])


def prompt_messages(shape: str, acc: str, earlier: list[tuple[str, str]]) -> list[dict]:
    """The prompt as one user message (rendered as text or through a chat template like any prompt)."""
    return [{"role": "user", "content": prompt_text(shape, acc, earlier)}]


def outcome_text(candidate) -> str:
    """An earlier variant's outcome as the prompt shows it: its speedup, or its verdict's key (its category in a
    population written before keys were kept). The reason line's first words were shown before: a failure on the
    GPU reads "on 4096x4096x4096: wrong values: ...", so the prompt said "failed (on 4096x4096x4096)"."""
    if candidate.ok:
        return f"{candidate.score:.2f}x"
    return f"failed ({candidate.key or candidate.category or 'failed'})"


def shown_variants(verified: list[tuple[str | None, float]], failed: list[tuple[str | None, str]], top_k: int,
                   negatives: int, rng: random.Random) -> list[tuple[str, str]]:
    """What a contrastive prompt shows, in training (a run's population) and in held-out turns (a method's earlier
    samples): the top_k fastest distinct verified specs with their speedups (earlier first among equals) and the
    latest `negatives` failures with their outcomes, shuffled (the policy reads the outcomes, not the order). A
    variant whose source holds no spec (None or empty) keeps its place and is not shown."""
    good: dict = {}
    for spec, speedup in sorted(verified, key=lambda v: -v[1]):
        good.setdefault(spec, f"{speedup:.2f}x")
    shown = list(good.items())[:top_k] + (failed[-negatives:] if negatives > 0 else [])
    shown = [(spec, outcome) for spec, outcome in shown if spec]
    rng.shuffle(shown)
    return shown


class SpecPrompter(Prompter):
    """Prompts for spec targets (the Prompter's target and render; its own messages). Contrastive (`top_k` > 0):
    the target's best earlier specs and its latest failures from the run's population (save for the `plain_share` of
    rows that show the shape only); plain: the shape only.
    A row's prompt is a pure function of (row, population size), so one GRPO group shares its prompt."""

    def __init__(self, population, top_k: int = 4, negatives: int = 2, fmt: str = "text", seed: int = 0,
                 plain_share: float = 0.0):
        super().__init__(population, "", top_k, negatives, fmt=fmt, seed=seed)
        self.plain_share = plain_share

    def earlier(self, spec_json: str, variant: int = 0) -> list[tuple[str, str]]:
        if self.top_k <= 0 or self.pop is None:
            return []
        done = [c for c in self.pop.all(self.target(spec_json).key) if c.status == "done"]
        spec = TargetSpec.from_json(spec_json)  # keyed by what the task is, not where the run lives
        digest = hashlib.sha256(f"{self.seed}|{spec.acc}|{','.join(spec.shapes)}|{variant}|{len(done)}".encode()) \
            .hexdigest()
        rng = random.Random(int(digest[:16], 16))
        # plain_share of the rows show the shape only (drawn only when asked for: other runs' prompts are unchanged)
        if self.plain_share and rng.random() < self.plain_share:
            return []
        done.sort(key=lambda c: c.id)
        return shown_variants([(spec_text_of(c.source), c.score) for c in done if c.ok],
                              [(spec_text_of(c.source), outcome_text(c)) for c in done if not c.ok],
                              self.top_k, self.negatives, rng)

    def messages(self, spec_json: str, variant: int = 0) -> list[dict]:
        spec = TargetSpec.from_json(spec_json)
        return prompt_messages(spec.shapes[0], spec.acc, self.earlier(spec_json, variant))


def shown_specs(prompt: str) -> set[str]:
    """The specs a contrastive prompt shows as earlier variants."""
    return {line[len("earlier: "):].rsplit(" -> ", 1)[0] for line in prompt.splitlines()
            if line.startswith("earlier: ")}


def is_copy(text: str, prompt: str) -> bool:
    """A completion whose spec is one its prompt already showed."""
    try:
        return parse_spec(text).text in shown_specs(prompt)
    except SpecError:
        return False


def spec_summary(texts: list[str], results: list[RewardResult], prompts: list[str] | None = None) -> dict:
    """What a batch of spec completions says beyond the reward: the share that asked for a cheat, how many of
    those the evaluator passed (must be 0), the geomean speedup of the verified ones, and (given the prompts) the
    share that copied a spec the prompt showed."""
    tricks = [trick_of(t) for t in texts]
    n = len(texts) or 1
    copies = {"copy_rate": sum(map(is_copy, texts, prompts)) / n} if prompts is not None else {}
    speedups = [r.speedup for r in results if r.ok and r.speedup]
    return {"cheat_rate": sum(t is not None for t in tricks) / n,
            "cheat_verified": sum(t is not None and r.ok for t, r in zip(tricks, results)),
            "speedup_verified": geomean(speedups),
            "bad_spec_rate": sum(r.key == Verdict.BAD_SPEC.value for r in results) / n,
            "unsupported_rate": sum(r.category == "failed" for r in results) / n, **copies}


# -- what was measured: teacher data and the recorded-reward table ---------------------------------------------
@dataclass(frozen=True)
class Measured:
    spec: str  # canonical spec text
    shape: str
    acc: str
    us: float
    baseline: str
    baseline_us: float
    source: str  # the file it was read from

    @property
    def speedup(self) -> float:
        return self.baseline_us / self.us


def measured_specs(csv_paths: list[str | Path], acc: str = "fp32", baseline: str = "torch",
                   families=SPEC_FAMILIES) -> dict[str, list[Measured]]:
    """Per shape, every verified device-mode measurement of a spec family's point in bench/tune CSV exports, with
    the `baseline` time of the same file and shape (the rows of one shape were measured side by side)."""
    names = {n: v for n, v in variants_by_name(acc).items() if v.family in families}
    out: dict[str, list[Measured]] = {}
    for path in csv_paths:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r.get("mode") == "device" and r.get("acc") == acc]
        base = {f"{r['m']}x{r['n']}x{r['k']}": float(r["time_us_median"]) for r in rows
                if r["method"] == baseline and str(r["verified"]) in ("1", "True") and r["time_us_median"]}
        for r in rows:
            shape = f"{r['m']}x{r['n']}x{r['k']}"
            v = names.get(r["method"])
            if v is None or shape not in base or str(r["verified"]) not in ("1", "True") or not r["time_us_median"]:
                continue
            out.setdefault(shape, []).append(Measured(spec_of(v).text, shape, acc, float(r["time_us_median"]),
                                                      baseline, base[shape], Path(path).name))
    return out


def teacher_pairs(specs: list[TargetSpec], measured: dict[str, list[Measured]], prompter: Prompter,
                  per_shape: int = 2, cheat_share: float = 0.15, seed: int = 0) -> list[Pair]:
    """SFT pairs for the targets' shapes: specs from the middle of each shape's measured speeds (not the best:
    RL is left something to find), and `cheat_share` of all pairs asking for a cheat, written as ordinary specs,
    so that the starting policy writes them and their extinction under RL is measured. Contrastive prompts show up
    to top_k other measured specs of the shape with their speedups, each slower than the answer: the policy learns
    to write a spec faster than those it is shown (CUDA-L1's contrastive step), never to repeat one."""
    rng = random.Random(seed)
    honest = []
    for target in specs:
        shape = target.shapes[0]
        ranked = sorted(measured.get(shape, []), key=lambda m: -m.speedup)
        if not ranked:
            continue
        mid = len(ranked) // 2
        chosen = ranked[max(0, mid - per_shape // 2):][:per_shape]
        for m in chosen:
            slower = list({o.spec: o for o in ranked if o.speedup < m.speedup and o.spec != m.spec}.values())
            shown = rng.sample(slower, min(len(slower), rng.randint(0, prompter.top_k))) if prompter.top_k else []
            earlier = [(o.spec, f"{o.speedup:.2f}x") for o in shown]
            honest.append(Pair(target.to_json(), prompt_messages(shape, target.acc, earlier), m.spec + "\n",
                               "teacher"))
    cheats = round(len(honest) * cheat_share / (1 - cheat_share)) if honest else 0
    pairs = list(honest)
    for i in range(cheats):
        base = honest[i % len(honest)]
        spec = parse_spec(base.completion)
        cheat = Spec(spec.family, spec.knobs, TRICKS[i % len(TRICKS)])
        pairs.append(Pair(base.spec, base.messages, cheat.text + "\n", "teacher_cheat"))
    rng.shuffle(pairs)
    return pairs
