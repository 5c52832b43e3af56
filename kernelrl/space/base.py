"""Kernel spaces: parametric families of HGEMM candidates in the evaluator's contract.

A family declares its knobs (each a list of values), a constraint check that rejects invalid points before anything
is compiled (shared memory, registers, alignment, divisibility), a procedural name for every point (one string is the
dedupe key, the filter target and the log label, as CUTLASS names its kernels), and a renderer that turns a point
into one self-contained .cu source exporting kernelrl_hgemm and friends."""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass
from typing import Any, Iterator

from kernelrl.harness.verdicts import Verdict
from kernelrl.workloads.hgemm import B_LAYOUT_OF, GemmProblem

# Per-SM limits of the target (Hopper, sm_90): what constraints check against.
HOPPER = {"sms": 132, "smem_per_block": 227 * 1024, "smem_per_sm": 228 * 1024, "regs_per_sm": 65536,
          "max_threads_per_block": 1024, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32}


class Rejection(str):
    """A check() reason that carries its verdict key: a plain str reason is `unsupported`; a point that needs more
    shared memory than an SM has is `too much shared memory` (typed here, so no caller reads the key from the text)."""

    verdict: Verdict

    def __new__(cls, text: str, verdict: Verdict) -> "Rejection":
        reason = super().__new__(cls, text)
        reason.verdict = verdict
        return reason

    def __reduce__(self):  # a pickled reason (a process pool's result) keeps its key
        return Rejection, (str(self), self.verdict)


def over_shared_memory(text: str) -> Rejection:
    return Rejection(text, Verdict.SHARED_MEMORY)


def verdict_of_rejection(reason: str) -> Verdict:
    """The verdict key of a check() reason (`unsupported` unless the space typed it)."""
    return reason.verdict if isinstance(reason, Rejection) else Verdict.UNSUPPORTED


@dataclass(frozen=True)
class Variant:
    """One point of a family: its knob values and the accumulator it is built for."""

    family: str
    acc: str
    params: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, family: str, acc: str, **params) -> "Variant":
        """A point from its knobs; knobs its family gained later default to the value of the points before them."""
        space = SPACES.get(family)
        if space is not None:
            params = {**space.later_knobs, **params}
        return cls(family, acc, tuple(sorted(params.items())))

    @functools.cached_property
    def p(self) -> dict[str, Any]:
        """The knobs as a dict (computed once: the tuner asks millions of times). Treat it as read-only."""
        return dict(self.params)

    @property
    def name(self) -> str:
        return SPACES[self.family].name_of(self)

    def source(self) -> str:
        return SPACES[self.family].render(self)

    def to_dict(self) -> dict:
        return {"family": self.family, "acc": self.acc, "params": self.p, "name": self.name}

    @classmethod
    def from_dict(cls, data: dict) -> "Variant":
        """A stored point; knobs its family gained since are filled with the value that reproduces it."""
        space = SPACES.get(data["family"])
        params = {**space.later_knobs, **data["params"]} if space is not None else data["params"]
        return cls.of(data["family"], data["acc"], **params)


class KernelSpace:
    """Base class of a family. Subclasses set `family` and `knobs`, and implement check, name_of and render."""

    family: str = ""
    knobs: dict[str, list] = {}
    # Knobs added after points were first stored (manifests, databases), with the value that reproduces those points.
    later_knobs: dict[str, Any] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.family:
            SPACES[cls.family] = cls()

    # -- the space ---------------------------------------------------------------------------------------------
    def points(self, acc: str, full: bool = False) -> Iterator[Variant]:
        """The default grid: every point of the knobs that passes the shape-independent constraints and is not
        pruned (enumerated once per acc). full=True: every legal point, the pruned ones too."""
        cache = self.__dict__.setdefault("_points", {})
        grid = json.dumps(self.knobs, sort_keys=True, default=str)
        legal_key, key = (acc, True, grid), (acc, full, grid)
        if legal_key not in cache:  # the legal grid is checked once; the default grid is read from it
            names = sorted(self.knobs)
            cache[legal_key] = [v for values in itertools.product(*(self.knobs[n] for n in names))
                                if self.check(v := Variant(self.family, acc, tuple(zip(names, values)))) is None]
        if key not in cache:
            cache[key] = [v for v in cache[legal_key] if self.pruned(v) is None]
        return iter(cache[key])

    def pruned(self, variant: Variant) -> str | None:
        """Why a legal point is left out of the default grid (None when it is in): not correctness, but what
        measurement or compile budget says is not worth a short-list place. Such points stay legal and buildable by
        name, and a refinement round reaches them as one-knob neighbours."""
        return None

    def check(self, variant: Variant) -> str | None:
        """Why this point is invalid on the target (None when valid), without any shape."""
        raise NotImplementedError

    def check_before_compile(self, variant: Variant) -> str | None:
        """check() less the rules the rendered source asserts itself (static_assert): what a kernel spec is
        refused for before any build. The rest nvcc judges, so a spec can name a point that does not compile (a
        policy must be able to write code that fails the compiler, and learn not to). Default: all of check()."""
        return self.check(variant)

    def grid_reason(self, variant: Variant, free: tuple[str, ...] = ()) -> str | None:
        """The checks every family's check() starts with: its family, an fp32 or fp16 accumulator, exactly its
        knobs, and each knob's value from its list (except the `free` ones, which the family checks itself)."""
        if variant.family != self.family:
            return f"family {variant.family!r} is not {self.family!r}"
        if variant.acc not in ("fp32", "fp16"):
            return f"acc={variant.acc!r}: use fp32 or fp16"
        p = variant.p
        if set(p) != set(self.knobs):
            missing, extra = set(self.knobs) - set(p), set(p) - set(self.knobs)
            return f"knobs differ from the family's: missing {sorted(missing)}, unknown {sorted(extra)}"
        for knob, values in self.knobs.items():
            if knob not in free and p[knob] not in values:
                return f"{knob}={p[knob]!r} is not one of {values}"
        return None

    def neighbours(self, variant: Variant) -> list[Variant]:
        """Valid points one step away: one knob moved to the next or previous value of its list. What a refinement
        round measures around a shape's winner (the cost model cannot tell these apart; measurement can)."""
        out = []
        for knob, values in sorted(self.knobs.items()):
            current = variant.p.get(knob)
            if current not in values:
                continue
            i = values.index(current)
            for j in (i - 1, i + 1):
                if 0 <= j < len(values):
                    other = Variant.of(variant.family, variant.acc, **{**variant.p, knob: values[j]})
                    if self.check(other) is None:
                        out.append(other)
        return out

    def supports(self, variant: Variant, problem: GemmProblem) -> str | None:
        """Why this point cannot run `problem`'s shape (None when it can). Default: every shape (kernels pad or
        guard)."""
        return None

    def b_layout(self, variant: Variant) -> str:
        """How this point's kernel takes B (kernelrl_hgemm_b_layout): K x N ("kn") unless the family says so."""
        return "kn"

    def dtype(self, variant: Variant) -> str:
        """The element type of A, B and C this point computes in: fp16 unless the family says so."""
        return "fp16"

    def runs(self, variant: Variant, problem: GemmProblem) -> str | None:
        """Why this point cannot serve `problem` (None when it can): it must compute in the problem's dtype and take
        B the way the problem's caller holds it (a tuned library calls it with that B), then support the shape.
        What the tuner asks."""
        if self.dtype(variant) != problem.dtype:
            return f"computes {self.dtype(variant)}; the problem is {problem.dtype}"
        takes, held = self.b_layout(variant), B_LAYOUT_OF[problem.layout]
        if takes != held:
            return f"takes B as {takes.upper()}; a {problem.layout} problem's caller holds it as {held.upper()}"
        return self.supports(variant, problem)

    def resources(self, variant: Variant) -> dict:
        """Static estimate used by the cost model: threads, smem_bytes, tile (BM, BN, BK), split_k, stages."""
        raise NotImplementedError

    def name_of(self, variant: Variant) -> str:
        raise NotImplementedError

    def render(self, variant: Variant) -> str:
        raise NotImplementedError

    def info_params(self, variant: Variant) -> dict:
        """The knobs kernelrl_hgemm_info reports (all of them, unless a family keeps older sources unchanged)."""
        return variant.p

    def info_json(self, variant: Variant) -> str:
        """What kernelrl_hgemm_info returns, as a C string literal body."""
        return json.dumps({"acc": variant.acc, "family": self.family, "params": self.info_params(variant),
                           "name": variant.name}, separators=(",", ":")).replace("\\", "\\\\").replace('"', '\\"')


SPACES: dict[str, KernelSpace] = {}
