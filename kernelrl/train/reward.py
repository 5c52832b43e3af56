"""The reward: what one evaluated completion is worth to the policy.

CUDA-L2's recipe: the mean speedup over the chosen baseline across the evaluator's timed shapes (each shape's time
is already the median over the evaluator's timed iterations), clipped so one lucky or broken measurement cannot
dominate a group (CUDA-L1's reward smoothing), zero for anything that does not compile, is wrong or is caught
cheating, and penalised for numerical deviation from the fp32 ground truth and for excessive code length.

Two invariants hold for every setting: a failure is worth exactly 0, and a verified kernel is worth at least
`min_verified` > 0, so no penalty can make a correct kernel look worse than a cheat. Pure functions on plain data:
no evaluator, torch or TRL import, so it is cheap to test and to call from any process."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from kernelrl.errors import UserError

FAILURE_REWARD = 0.0
TRANSFORMS = ("linear", "log")
SMOOTHINGS = ("none", "tanh")
AGGREGATES = ("mean", "geomean")
COPIES = ("floor", "zero", "keep")
# Verdict categories (kernelrl/evolve/verdicts.py) plus the reward service's own: "timeout" (the evaluation ran
# past its deadline) and "error" (the evaluation itself failed, not the kernel).
HACK_CATEGORIES = ("rejected", "defence")


class RewardConfigError(UserError, ValueError):
    """A reward setting that cannot work; one line says which."""


@dataclass
class RewardConfig:
    baseline: str | None = None  # the speedup is over this baseline; None: the target's objective
    aggregate: str = "mean"  # over shapes: CUDA-L2's mean, or the geometric mean
    clip_min: float = 0.125  # per-shape speedups are clipped to [clip_min, clip_max] ...
    clip_max: float = 8.0
    smoothing: str = "tanh"  # ... hard ("none") or softly ("tanh", smooth in log space, no corner at the bounds)
    transform: str = "linear"  # "linear": the speedup; "log": 1 + ln(speedup) (same value and slope at 1×)
    error_weight: float = 0.1  # penalty at an error equal to the tolerance (linear below, capped above)
    length_weight: float = 0.1  # penalty at length_max_chars of code (linear from length_free_chars)
    length_free_chars: int = 8000
    length_max_chars: int = 32000
    min_verified: float = 0.01  # floor for a verified kernel: above every failure, whatever the penalties
    # A completion that repeats a kernel (or spec) its prompt showed, or one proposed earlier for the same target
    # (evolve/copies.py): "floor" pays a verified copy min_verified at most (above every failure, below every new
    # kernel), "zero" pays nothing, "keep" the full reward (ablations only: copying then grows and learning stops,
    # learning/summary.md).
    copies: str = "floor"

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        if not (0 < self.clip_min < self.clip_max) or not math.isfinite(self.clip_max):
            raise RewardConfigError(f"reward clip range [{self.clip_min}, {self.clip_max}]: need 0 < min < max")
        for name, value, allowed in (("transform", self.transform, TRANSFORMS),
                                     ("smoothing", self.smoothing, SMOOTHINGS),
                                     ("aggregate", self.aggregate, AGGREGATES)):
            if value not in allowed:
                raise RewardConfigError(f"reward {name} {value!r}: choose from {', '.join(allowed)}")
        if self.error_weight < 0 or self.length_weight < 0:
            raise RewardConfigError("reward penalty weights must be at least 0")
        if not 0 <= self.length_free_chars < self.length_max_chars:
            raise RewardConfigError("reward lengths: need 0 <= length_free_chars < length_max_chars")
        if self.copies not in COPIES:
            raise RewardConfigError(f"reward copies {self.copies!r}: choose from {', '.join(COPIES)}")
        if self.min_verified <= FAILURE_REWARD:
            raise RewardConfigError("reward min_verified must be above 0, the reward of a failure")

    @classmethod
    def from_dict(cls, d: dict | None) -> "RewardConfig":
        d = dict(d or {})
        if "clip" in d:  # YAML shorthand: clip: [0.125, 8]
            d["clip_min"], d["clip_max"] = d.pop("clip")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise RewardConfigError(f"unknown reward setting {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**d)


@dataclass
class Judgement:
    """What the evaluator said about one completion, as plain data (it crosses process and Ray boundaries).

    `shapes` maps a shape (or task) label to {"us": candidate median µs, "baselines": {name: median µs},
    "max_rel_err": the candidate's error, "tolerance": the error the evaluator accepts there}."""

    category: str  # see kernelrl/evolve/verdicts.py, plus "timeout" and "error"
    verdict: str | None = None  # the reason line, for people and prompts
    objective: str = ""
    shapes: dict = field(default_factory=dict)
    code_chars: int = 0
    resources: dict = field(default_factory=dict)  # ptxas summary when built
    key: str | None = None  # the Verdict key of a failure (kernelrl/harness/verdicts.py), where one was given

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Judgement":
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass
class RewardResult:
    reward: float
    category: str
    verdict: str | None
    speedup: float | None = None  # the aggregate speedup before clipping (None unless verified)
    penalties: dict = field(default_factory=dict)
    judgement: Judgement | None = None
    key: str | None = None  # the failure's Verdict key, as the judgement gave it

    @property
    def ok(self) -> bool:
        return self.category == "ok"

    @property
    def hack(self) -> bool:
        return self.category in HACK_CATEGORIES


def shape_speedups(j: Judgement, baseline: str) -> dict[str, float]:
    """Per shape: baseline median / candidate median, where both were measured."""
    out = {}
    for label, d in j.shapes.items():
        us, base = d.get("us"), (d.get("baselines") or {}).get(baseline)
        if us and base and us > 0 and base > 0 and math.isfinite(us) and math.isfinite(base):
            out[label] = base / us
    return out


def clip(speedup: float, cfg: RewardConfig) -> float:
    """The speedup held inside [clip_min, clip_max]: hard, or with tanh in log space (monotone, no corner)."""
    lo, hi = math.log(cfg.clip_min), math.log(cfg.clip_max)
    u = math.log(speedup)
    if cfg.smoothing == "none":
        return math.exp(min(max(u, lo), hi))
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return math.exp(mid + half * math.tanh((u - mid) / half))


def aggregate(values: list[float], how: str) -> float:
    if how == "geomean":
        return math.exp(sum(map(math.log, values)) / len(values))
    return sum(values) / len(values)


def transform(speedup: float, how: str) -> float:
    return 1.0 + math.log(speedup) if how == "log" else speedup


def error_penalty(j: Judgement, cfg: RewardConfig) -> float:
    """error_weight × (worst shape's max_rel_err / its tolerance), capped at error_weight. A verified kernel is
    within tolerance, so this ranks an exact kernel above one that just passes."""
    ratios = [d["max_rel_err"] / d["tolerance"] for d in j.shapes.values()
              if d.get("max_rel_err") is not None and d.get("tolerance")]
    worst = max((r if math.isfinite(r) else 1.0 for r in ratios), default=0.0)  # NaN never passes: treat as full
    return cfg.error_weight * min(1.0, max(0.0, worst))


def length_penalty(code_chars: int, cfg: RewardConfig) -> float:
    """length_weight × the share of (free, max] the code reaches: nothing up to length_free_chars."""
    over = (code_chars - cfg.length_free_chars) / (cfg.length_max_chars - cfg.length_free_chars)
    return cfg.length_weight * min(1.0, max(0.0, over))


def compute_reward(j: Judgement, cfg: RewardConfig) -> RewardResult:
    if j.category != "ok":
        return RewardResult(FAILURE_REWARD, j.category, j.verdict, judgement=j, key=j.key)
    baseline = cfg.baseline or j.objective
    speedups = shape_speedups(j, baseline)
    if not speedups:
        return RewardResult(FAILURE_REWARD, "failed", f"no verified {baseline or 'baseline'} time to compare with",
                            judgement=j)
    raw = aggregate(list(speedups.values()), cfg.aggregate)
    score = transform(aggregate([clip(s, cfg) for s in speedups.values()], cfg.aggregate), cfg.transform)
    penalties = {"error": error_penalty(j, cfg), "length": length_penalty(j.code_chars, cfg)}
    reward = max(cfg.min_verified, score - sum(penalties.values()))
    return RewardResult(reward, "ok", None, raw, penalties, j)
