"""Kernel specs: a family point written as one line of text, the action a small policy learns to write.

    wgmma BM=128 BN=256 stages=4 raster=8 split_k=1 schedule=pingpong cluster=1x1 epilogue=direct ...
    mma_sync BM=128 BN=128 BK=32 WM=64 WN=64 stages=3 frag_double_buffer=1 swizzle=8 split_k=1 epilogue=direct
    small BM=32 BN=64 cluster_k=4
    wgmma BM=128 BN=128 stages=4 trick=cache

The first word names a family, then `knob=value` words in any order. A knob left out takes its family's default
(the value the family's older points had, else the first of its list). What is the problem's, not the writer's,
comes from the problem: the accumulator, the element type and how B is held. `trick=` renders one of the
evaluator corpus's cheats around the point (kernelrl/space/tricks.py): an RL run measures whether its policy
learns to stop writing them, since every one is caught and is worth nothing.

A spec fails in three ways, each its own verdict: it does not parse (`bad spec`: an unknown family, knob or trick,
a value of the wrong type), it names a point its family rejects (`too much shared memory`, or `unsupported` with
the family's reason), or its source does not compile (the builder's verdict, later: the rules a family's
source asserts itself, such as mma_sync's warp count, are left to nvcc, KernelSpace.check_before_compile)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelrl.errors import UserError
from kernelrl.harness.verdicts import Verdict
from kernelrl.space.base import SPACES, Variant, verdict_of_rejection
from kernelrl.space.tricks import TRICKS, apply_trick
from kernelrl.workloads.hgemm import B_LAYOUT_OF

SPEC_FAMILIES = ("wgmma", "mma_sync", "small")
PROBLEM_KNOBS = ("b_layout", "dtype")  # the problem's: a spec may not set them
SPEC_HEADER = "// kernelrl spec: "  # first line of every rendered source: what the replay and people read


class SpecError(UserError, ValueError):
    """A spec that does not parse; str() is the one-line verdict (`bad spec: ...`)."""

    verdict = Verdict.BAD_SPEC

    def __init__(self, detail: str):
        super().__init__(Verdict.BAD_SPEC.reason(detail))
        self.detail = detail


class SpecRejected(ValueError):
    """A spec that parses but names a point its family rejects: its verdict key and the family's reason."""

    def __init__(self, verdict: Verdict, detail: str):
        super().__init__(verdict.reason(detail))
        self.verdict, self.detail = verdict, detail


@dataclass(frozen=True)
class Spec:
    family: str
    knobs: tuple[tuple[str, object], ...]  # only the knobs the text set, sorted
    trick: str | None = None

    @property
    def text(self) -> str:
        """The canonical text: the family, the knobs that differ from its defaults in the family's order, the
        trick. Two specs of the same point have the same text."""
        base = defaults(self.family)
        values = {**base, **dict(self.knobs)}
        words = [self.family] + [f"{k}={_show(values[k])}" for k in writable_knobs(self.family)
                                 if values[k] != base[k]]
        return " ".join(words + ([f"trick={self.trick}"] if self.trick else []))

    def variant(self, acc: str, dtype: str = "fp16", layout: str = "nn") -> Variant:
        """The family point this spec names for a problem of this accumulator, element type and layout (the
        accumulator the trick renders, for fp16_acc). Raises SpecRejected when the family rejects it."""
        space = SPACES[self.family]
        bound = {"b_layout": B_LAYOUT_OF[layout], "dtype": dtype}
        params = {**defaults(self.family), **dict(self.knobs), **{k: v for k, v in bound.items() if k in space.knobs}}
        render_acc = "fp16" if self.trick == "fp16_acc" else acc
        variant = Variant.of(self.family, render_acc, **params)
        reason = space.check_before_compile(variant)  # what the source asserts, nvcc judges
        if reason:
            raise SpecRejected(verdict_of_rejection(reason), reason)
        return variant

    def source(self, acc: str, dtype: str = "fp16", layout: str = "nn") -> str:
        """The candidate .cu this spec renders to, its canonical text on the first line."""
        variant = self.variant(acc, dtype, layout)
        body = variant.source()
        if self.trick:
            claimed = Variant.of(variant.family, acc, **variant.p)
            body = apply_trick(self.trick, body, SPACES[self.family].info_json(claimed))
        return f"{SPEC_HEADER}{self.text}\n{body}"


def spec_text_of(source: str) -> str | None:
    """The spec a rendered source came from (its first line), or None for a hand-written file."""
    first = source.split("\n", 1)[0]
    return first[len(SPEC_HEADER):].strip() if first.startswith(SPEC_HEADER) else None


def writable_knobs(family: str) -> list[str]:
    return [k for k in SPACES[family].knobs if k not in PROBLEM_KNOBS]


def defaults(family: str) -> dict:
    space = SPACES[family]
    return {k: space.later_knobs.get(k, values[0]) for k, values in space.knobs.items() if k not in PROBLEM_KNOBS}


def _show(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


def _parse_value(family: str, knob: str, text: str):
    """The text as the type of the knob's values: an int, a 0/1 (or true/false) flag, or a word."""
    sample = SPACES[family].knobs[knob][0]
    if isinstance(sample, bool):
        flags = {"0": False, "1": True, "false": False, "true": True}
        if text.lower() not in flags:
            raise SpecError(f"{knob}={text}: a flag is 0 or 1")
        return flags[text.lower()]
    if isinstance(sample, int):
        if not text.isdigit():
            raise SpecError(f"{knob}={text}: a whole number")
        return int(text)
    return text


def parse_spec(text: str) -> Spec:
    """The spec on the first non-empty line of a completion; raises SpecError with a one-line verdict."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    words = line.split()
    if not words:
        raise SpecError("empty: write a family name and its knobs, e.g. 'wgmma BM=128 BN=128 stages=4'")
    family = words[0]
    if family not in SPEC_FAMILIES:
        raise SpecError(f"unknown family {family[:40]!r}: one of {', '.join(SPEC_FAMILIES)}")
    knobs, trick = {}, None
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq or not key or not value:
            raise SpecError(f"{word[:40]!r} is not knob=value")
        if key == "trick":
            if value not in TRICKS:
                raise SpecError(f"unknown trick {value[:40]!r}: one of {', '.join(TRICKS)}")
            trick = value
            continue
        if key in PROBLEM_KNOBS:
            raise SpecError(f"{key} is the problem's, not the spec's")
        if key not in SPACES[family].knobs:
            raise SpecError(f"{family} has no knob {key[:40]!r}; its knobs: {', '.join(writable_knobs(family))}")
        if key in knobs:
            raise SpecError(f"{key} given twice")
        knobs[key] = _parse_value(family, key, value)
    return Spec(family, tuple(sorted(knobs.items())), trick)


def spec_of(variant: Variant, trick: str | None = None) -> Spec:
    """A family point as a spec (its writable knobs), e.g. a tuner measurement turned into teacher data."""
    return Spec(variant.family, tuple(sorted((k, v) for k, v in variant.p.items() if k not in PROBLEM_KNOBS)), trick)


def spec_words(families=SPEC_FAMILIES) -> list[str]:
    """Every word a spec can hold, each `knob=value` with its leading space: a policy's vocabulary."""
    words = list(families) + [f" trick={t}" for t in TRICKS]
    for family in families:
        for knob in writable_knobs(family):
            words += [f" {knob}={_show(v)}" for v in SPACES[family].knobs[knob]]
    return list(dict.fromkeys(words))
