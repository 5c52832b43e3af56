"""Whether a tolerance can tell a task's right answer from a trivial one, and the rule each output is judged by.

A tolerance is a claim about what it can tell apart. atol = rtol = 1e-4 cannot tell a softmax over 393216 columns
(every output about 2.5e-6) from all zeros; atol = rtol = 1e-2 cannot tell a sigmoid of a softmax from one constant.
An RL policy finds such outputs within a few steps, so before any candidate runs the worker asks, per output and per
tolerance profile, whether outputs chosen without this input would pass (`probe`):

- `zeros`: all zeros;
- `constant`: one value everywhere, the mean of the reference's output on *other* inputs (not this output's own
  mean: for a scalar loss that would be the answer itself);
- `stale`: the reference's output on other inputs (what a cache returns for fresh inputs of the same shape).

The rule (`Rule`) an output is then judged by under a profile, with that profile's tolerance t:

- `allclose`: no trivial output passes atol = rtol = t, so KernelBench's own check tells them apart: it alone judges;
- `scale`: some trivial output passes it, none passes the scale-aware error max |o - r| / (|r| + rms(r)) <= t (the
  HGEMM evaluator's metric: relative for large entries, relative to the output's typical size near zero): both must
  hold;
- `none`: even the scale-aware error cannot tell them apart: the reference (nearly) ignores its input. That is the
  task's verdict (`input-independent reference`), not the candidate's: its pairs are judged as usual for every
  other check, never `correct` under that profile, and left out of that profile's fast_p.

Tensors are compared in chunks (kernelrl.harness.compare), so a multi-GB output needs no full-size temporaries.
Pure functions of torch tensors: tested on the CPU."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

import torch

from kernelrl.harness import compare
from kernelrl.harness.tolerance import PROFILES, STRICTEST, output_tolerance

ALTERNATIVES = ("zeros", "constant", "stale")
NOISE_MARGIN = 4.0  # the scale-aware rule is trusted where the reference's own error is under a quarter of it


class Rule(str, Enum):
    ALLCLOSE = "allclose"
    SCALE = "scale"
    NONE = "none"


@dataclass(frozen=True)
class Alternative:
    """One trivial output's distance from the reference: the tightest atol = rtol it meets (compare.closeness's)
    and its scale-aware error."""

    tightest: float
    scale: float


@dataclass(frozen=True)
class OutputProbe:
    """One reference output's trivial alternatives, by name (ALTERNATIVES); exact outputs (integers, booleans) are
    judged by equality, so their alternatives pass only when equal."""

    alternatives: dict[str, Alternative]
    exact: bool = False
    dtype: str = "float32"  # the reference output's, which sets each profile's tolerance
    noise: float = 0.0  # the reference's own scale-aware error against a float64 reference (0: not measured)

    def rule(self, tol: float) -> Rule:
        """The rule an output is judged by under tolerance `tol` (atol = rtol). An output whose scale-aware error
        the reference itself does not meet (a group norm's mean: rounding error around an exact constant) cannot be
        judged scale-aware: where atol = rtol accepts a trivial output, it is `none`."""
        if self.exact:
            return Rule.NONE if any(a.tightest == 0 for a in self.alternatives.values()) else Rule.ALLCLOSE
        if not any(_within(a.tightest, tol) for a in self.alternatives.values()):
            return Rule.ALLCLOSE
        if not _within(NOISE_MARGIN * self.noise, tol):  # an honest kernel's error against the float32 reference
            return Rule.NONE  # is its own rounding and the reference's, on inputs other than the probe's: margin
        if not any(_within(a.scale, tol) for a in self.alternatives.values()):
            return Rule.SCALE
        return Rule.NONE

    def passing(self, tol: float, scale_aware: bool) -> list[str]:
        """The alternatives that would pass `tol`: by atol = rtol alone, or also by the scale-aware error."""
        return [name for name, a in self.alternatives.items()
                if _within(a.tightest, tol) and (not scale_aware or _within(a.scale, tol))]


def _within(error: float, tol: float) -> bool:
    return not math.isnan(error) and error <= tol


def _finite_real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t


def _finite_mean(ref: torch.Tensor, power: int) -> float:
    """Mean of the finite elements raised to `power` (0 for none), in chunks."""
    total, count = 0.0, 0
    for (r,) in compare._chunks(_finite_real(ref)):
        r = r.double()
        finite = torch.isfinite(r)
        total += float(r.masked_fill(~finite, 0.0).pow(power).sum())
        count += int(finite.sum())
    return total / count if count else 0.0


def rms(ref: torch.Tensor) -> float:
    """Root mean square of the finite elements (0 for none)."""
    return math.sqrt(_finite_mean(ref, 2))


def mean(ref: torch.Tensor) -> float:
    """Mean of the finite elements (0 for none)."""
    return _finite_mean(ref, 1)


def scale_error(out: torch.Tensor, ref: torch.Tensor, ref_rms: float | None = None) -> float:
    """max |out - ref| / (|ref| + rms(ref)) over the elements where `ref` is finite (non-finite ones are matched by
    the judge beforehand); an element of an all-zero reference counts 0 when equal and infinite otherwise. NaN in
    `out` where `ref` is finite makes it NaN."""
    out, ref = _finite_real(out), _finite_real(ref)
    scale = rms(ref) if ref_rms is None else ref_rms
    worst = 0.0
    for o, r in compare._chunks(out, ref):
        r = r.double()
        finite = torch.isfinite(r)
        diff = (o.double() - r).abs().masked_fill(~finite, 0.0)
        if bool(torch.isnan(diff).any()):
            return math.nan
        den = r.abs().masked_fill(~finite, 0.0) + scale
        err = torch.where(den > 0, diff / den.clamp_min(torch.finfo(torch.float64).tiny),
                          torch.where(diff > 0, math.inf, 0.0))
        worst = max(worst, float(err.max())) if err.numel() else worst
    return worst


def _distance(alt: torch.Tensor, ref: torch.Tensor, ref_rms: float) -> Alternative:
    finite_only = not compare.all_finite(ref)
    _, _, tightest = compare.closeness(alt, ref, 1.0, finite_only=finite_only)
    return Alternative(tightest, scale_error(alt, ref, ref_rms))


def probe_output(ref: torch.Tensor, other: torch.Tensor) -> OutputProbe:
    """The trivial alternatives of one reference output `ref`, `other` being the reference's output of the same
    shape on other inputs. The constant one is built chunk by chunk: no full-size tensor beside `ref`'s."""
    if not (ref.is_floating_point() or ref.is_complex()):
        c = torch.full((), round(mean(other.double())) if other.numel() else 0, dtype=ref.dtype, device=ref.device)
        equal = {"zeros": bool((ref == 0).all()), "constant": bool((ref == c).all()),
                 "stale": other.shape == ref.shape and torch.equal(other, ref)}
        return OutputProbe({k: Alternative(0.0 if same else math.inf, 0.0 if same else math.inf)
                            for k, same in equal.items()}, exact=True, dtype=_name(ref.dtype))
    scale = rms(ref)
    alts = {name: _distance(alternative(name, ref, other), ref, scale) for name in ("zeros", "constant")}
    alts["stale"] = _distance(other, ref, scale) if other.shape == ref.shape else Alternative(math.inf, math.inf)
    return OutputProbe(alts, dtype=_name(ref.dtype))


def alternative(name: str, ref: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """The trivial output `name` (ALTERNATIVES) for a floating-point reference output `ref`, `other` being the
    reference's output on other inputs. Zeros and the constant are one element seen at every position (stride 0):
    no full-size tensor (complex ones excepted: compared as (real, imaginary) pairs, which that cannot be)."""
    if name == "stale":
        return other if other.shape == ref.shape else torch.zeros_like(ref)
    value = 0.0 if name == "zeros" else (mean(other) if other.numel() else 0.0)
    if ref.is_complex():
        return torch.full_like(ref, value)
    return torch.full((), value, dtype=ref.dtype, device=ref.device).expand(ref.shape)


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def probe(refs: list, others: list) -> list[OutputProbe | None]:
    """Every output's probe (None for an output that is not a tensor: judged by equality, as before)."""
    out = []
    for r, o in zip(refs, others):
        ok = isinstance(r, torch.Tensor) and isinstance(o, torch.Tensor) and r.numel() > 0
        out.append(probe_output(r, o) if ok else None)
    return out


INPUT_INDEPENDENT = "the reference's output barely depends on its input"


def task_verdict(probes: list[OutputProbe | None], profiles=PROFILES) -> dict[str, str]:
    """{profile: why the task cannot tell a right output from a trivial one under it}, for the profiles where some
    output's rule is `none`. Two kinds (`input_independent`): where even the strictest profile cannot, the reference
    itself (nearly) ignores its input, the task's own verdict under every profile; where only a looser one cannot
    (KernelBench's 1e-2 on a matrix-vector product whose outputs all sit within 1 % of their mean), that profile's
    tolerance is blind there: the pair is not correct under it and leaves its fast_p."""
    out = {}
    for profile in profiles:
        why = []
        for i, p in enumerate(probes):
            tol = output_tolerance(p.dtype, profile) if p is not None else 0.0
            if p is not None and p.rule(tol) is Rule.NONE and not _within(NOISE_MARGIN * p.noise, tol):
                why.append(f"output {i}: its own rounding error (a float64 reference differs from it by "
                           f"{p.noise:.3g} scale-aware) and {' and '.join(_ALT_TEXT[n] for n in p.passing(tol, False))}"
                           f" within atol=rtol={tol:g}")
            elif p is not None and p.rule(tol) is Rule.NONE:
                names = p.passing(tol, scale_aware=not p.exact)
                why.append(f"output {i}: {' and '.join(_ALT_TEXT[n] for n in names)} within atol=rtol={tol:g}"
                           + ("" if p.exact else " and scale-aware"))
        if why:
            out[profile] = "; ".join(why)
    if STRICTEST in out:
        return {p: f"{INPUT_INDEPENDENT} ({out[STRICTEST]})" for p in profiles}
    return {p: f"atol=rtol cannot tell a right output from a trivial one under the {p} profile here ({why})"
            for p, why in out.items()}



_ALT_TEXT = {"zeros": "all zeros", "constant": "one constant from other inputs' outputs",
             "stale": "the output of other inputs"}


def needs_exact_reference(probes: list[OutputProbe | None], profiles=PROFILES) -> bool:
    """Whether some output would be judged scale-aware under some profile: only then does the scale-aware error's
    own trust (the reference's error against a float64 one, `with_noise`) matter."""
    return any(p is not None and not p.exact and p.rule(output_tolerance(p.dtype, q)) is Rule.SCALE
               for p in probes for q in profiles)


def with_noise(probes: list[OutputProbe | None], refs: list, exact_refs: list) -> list[OutputProbe | None]:
    """The probes with each floating output's scale-aware error against the same reference computed in float64."""
    out = []
    for p, r, e in zip(probes, refs, exact_refs):
        if p is not None and not p.exact and isinstance(e, torch.Tensor) and e.shape == r.shape:
            p = replace(p, noise=scale_error(r, e))
        out.append(p)
    return out
