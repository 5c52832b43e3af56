"""The correctness checks of a KernelBench candidate (the worker's `JudgeMixin`): every checked call (the candidate
first, then the reference on a clone of the same inputs), the sequence of checks `_verify` runs (the task's inputs
guarded, refilled in place, a near duplicate, the other seeds and distributions, a smaller batch, stream order),
and `_judge`, which compares one call's outputs with the reference's. Runs only in the worker process."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from kernelrl.harness import compare
from kernelrl.harness.tolerance import PROFILES, loosest_tolerance, output_tolerance, passes
from kernelrl.harness.verdicts import Rejected, Verdict
from kernelrl.kernelbench.inputs import Held, _flatten, _storage
from kernelrl.kernelbench.trivial import Rule, scale_error
from kernelrl.kernelbench.watch import Fatal

if TYPE_CHECKING:
    from kernelrl.kernelbench.task_guard import TaskSnapshot

LARGE_FOOTPRINT = 1 << 30  # a task whose input set and output take this many bytes: its cache is released between
# checks of different sizes (`_release_cached`)
SLEEP_CYCLES = 10_000_000  # the stream-order check's spin kernel: ~5 ms at 2 GHz
# what PyTorch raises on touching an output of CUDA graphs (cudagraph trees) that a later replay overwrote
OVERWRITTEN = "overwritten by a subsequent run"
NONFINITE_NOTE = ("the reference's output is non-finite on some checked inputs: those elements must hold the same "
                  "non-finite values, the rest is compared as usual")


def new_errors() -> dict:
    """A pair's error account, filled by every judged output: the largest errors, the tolerance the relative one
    was judged by, the tightest tolerance every output met (harness.compare.closeness), whether each tolerance
    profile still passes, and the first numerical failure of the deciding profile that a looser one passes."""
    return {"max_abs_err": 0.0, "max_rel_err": 0.0, "tightest": 0.0, "passes": {p: True for p in PROFILES},
            "numerics": None, "scale_err": None, "kernelbench_rule": None}


KERNELBENCH_ATOL_RTOL = 1e-2  # KernelBench's own check: torch.allclose(output, reference, atol=1e-2, rtol=1e-2)


def kernelbench_rule(outs: list, refs: list) -> bool:
    """What KernelBench's own check says of one call: as many outputs as the reference's, each of its shape and
    dtype, torch.allclose(atol=1e-2, rtol=1e-2) (in chunks here; NaN never close, infinities equal; integer outputs
    too, so an index of 101 passes for 100). Nothing about how the outputs were made: which inputs they alias,
    whether they are the previous call's storage, what ran to make them. So a pair kernelrl rejects where this is
    True was rejected for its behaviour or, on integer outputs, for a value KernelBench's rule cannot see."""
    if len(outs) != len(refs):
        return False
    for o, r in zip(outs, refs):
        if not isinstance(r, torch.Tensor):
            if isinstance(o, torch.Tensor) or o != r:
                return False
            continue
        if not isinstance(o, torch.Tensor) or o.shape != r.shape or o.dtype != r.dtype or o.device != r.device:
            return False
        if not compare.allclose(o, r, KERNELBENCH_ATOL_RTOL, KERNELBENCH_ATOL_RTOL):
            return False
    return True


def _fill_nan(xs: list) -> None:
    for x in xs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x.fill_(float("nan"))


def _copy_into(dsts: list, srcs: list) -> None:
    """Each tensor of `dsts` takes its value from `srcs` (in a function of its own: no loop variable outlives the
    copy, keeping a multi-GB input alive beside the next allocation)."""
    for d, s in zip(dsts, srcs):
        if isinstance(d, torch.Tensor) and getattr(s, "shape", None) == d.shape:
            d.copy_(s)


class JudgeMixin:
    """KBWorker's checks (it provides `_call`, `begin`, `sync`: kernelrl/kernelbench/worker_process.py)."""

    if TYPE_CHECKING:  # KBWorker's (for the type checker only: the guards watch the class's names)
        s: dict
        pair_notes: list[str]
        task_snapshot: TaskSnapshot | None

    @staticmethod
    def _check_class(cand, ref):
        for klass in type(cand).__mro__[1:]:
            if klass is type(ref) or klass.__name__ == "Model":
                raise Rejected(Verdict.INHERITS_MODEL, f"ModelNew derives from {klass.__module__}.{klass.__name__} "
                               f"(the reference is one super() call away)")

    def _reference(self, tid, ref, pristine, phase):
        """The reference's output on a clone of the pristine inputs (computed after the candidate's call). Where
        the reference itself runs out of device memory, the task is too large (never the candidate's verdict)."""
        self.begin(tid, "reference", phase)
        # the reference's parameters as the task made them: a candidate that writes them through `.data` (no version
        # counter moves) at the end of its call and puts them back when its output is freed would have the checks
        # compare it with a reference computed on its own weights (corpus: zeroes_reference_weights_between_calls)
        moved = self.task_snapshot.reference_values(f"before the reference's {phase} call") \
            if self.task_snapshot is not None else None
        if moved:
            raise Fatal(Verdict.HARNESS_PATCH, moved)
        try:
            ref_in = self._clone(pristine)
            if self.seeded:  # a random task: the seed the candidate's call ran under
                self._manual_seed(self.call_seed)
            ref_out = self._call(ref, ref_in)
            self.sync()
        except torch.OutOfMemoryError as exc:
            raise self._too_large(exc, "the reference's own call") from None
        return ref_in, ref_out

    def _check(self, tid, ref, cand, pristine, cand_in, phase, prev, errs, guard="poison"):
        """One checked call on `cand_in` (whose values equal `pristine`): the candidate first, then the reference."""
        self._arena = 2 * max(self._nbytes(prev[1]) if prev else 0, self._nbytes(pristine)) + (8 << 20)
        self.begin(tid, "candidate", phase)
        try:
            out = self._cand_call(cand, cand_in, phase, trace=True, guard=guard if self.cuda else None)
        except Rejected as exc:  # out of memory: the candidate's verdict only where the reference fits instead
            raise self._out_of_memory(tid, ref, pristine, phase, exc) from None
        ref_in, ref_out = self._reference(tid, ref, pristine, phase)
        self.begin(tid, "candidate", f"judge {phase}")
        self._judge(out, ref_out, cand_in, pristine, ref_in, prev, errs, poisoned=self.cuda and bool(guard))
        return out, self._prev_reference(ref, ref_out)  # where the memory plan says, on the host

    def _verify(self, tid, tmod, ref, cand, errs):
        seeds = [self.base_seed + i for i in range(max(1, self.s["n_seeds"]) - 1)] + [self.secret & 0x7FFF_FFFF]
        held = Held(self.mem_plan.held_bytes)  # outputs live on after their check (up to a bound: two footprints,
        # fewer where the memory plan says): the candidate cannot tell checks from timing by whether its last output
        # is still referenced
        # 1. the task's inputs, guarded: unwritten elements and out-of-bounds writes
        pristine = self._inputs(tmod, seeds[0], "task")
        cand_in = self._clone(pristine)
        prev = self._check(tid, ref, cand, pristine, cand_in, "verify:task:0", None, errs, guard="oob")
        held.add(prev)
        # 2. the same tensors refilled in place: caches keyed by pointer or id
        pristine = self._inputs(tmod, seeds[0], "uniform")
        _copy_into(cand_in, pristine)
        prev = self._check(tid, ref, cand, pristine, cand_in, "verify:refilled", prev, errs)
        held.add(prev)
        # 3. a near duplicate: caches keyed by a partial fingerprint
        pristine = self._clone(pristine)
        self._perturb(pristine)
        prev = self._check(tid, ref, cand, pristine, self._clone(pristine), "verify:near-duplicate", prev, errs)
        held.add(prev)
        # 4. the other seeds (the last is this run's secret), two distributions each
        for seed in seeds[1:]:
            for dist in ("task", "uniform"):
                phase = f"verify:{dist}:{'secret' if seed == seeds[-1] else seed - self.base_seed}"
                pristine = self._inputs(tmod, seed, dist)
                prev = self._check(tid, ref, cand, pristine, self._clone(pristine), phase, prev, errs)
                held.add(prev)
        # the first check's inputs and the last pristine copy are not read again: the checks of another size (and
        # the full-size stream-order check after them) get their memory (a candidate that kept them holds its own)
        del cand_in, pristine
        # 5. a smaller batch
        self._release_cached()
        held.add(self._check_batch(tid, tmod, ref, cand, errs))
        # 6. stream order (CUDA)
        if self.cuda:
            self._release_cached()
            held.add(self._check_stream_order(tid, tmod, ref, cand))
        del held

    def _release_cached(self):
        """Before a check whose copies differ in size from the last ones' (a smaller batch, then the task's size
        again): the allocator's cached blocks of a large task go back to the device. A block split for a smaller
        tensor cannot serve a full-size one, and the memory plan counts live copies, not a fragmented cache. (On the
        H100, with this release in place, 45_Average_Pooling_2D still ran out at the stream-order check with 14.6
        GiB cached but unallocated, and 96_HuberLoss with 78 GiB allocated and its cache empty: live copies,
        since dropped earlier.)"""
        plan = self.mem_plan
        if self.cuda and plan is not None and plan.footprint.total >= LARGE_FOOTPRINT:
            self._free()

    def _check_batch(self, tid, tmod, ref, cand, errs):
        pristine = self._vary_batch(self._inputs(tmod, self.base_seed + 77, "task"))
        if pristine is None:
            return
        batch = pristine[0].shape[0]
        phase = f"verify:batch {batch}"
        try:
            return self._check(tid, ref, cand, pristine, self._clone(pristine), phase, None, errs)
        except (Rejected, Fatal) as exc:
            if isinstance(exc, Fatal):
                raise
            try:
                self._reference(tid, ref, pristine, phase)
            except Exception:
                return  # the reference itself is bound to its shape: nothing to ask of the candidate
            raise Rejected(Verdict.SPECIALISED, f"{exc} (batch {batch} instead of the "
                           f"task's)") from None
        except Exception:
            return  # the reference failed on this batch (the candidate ran first, its verdict is not needed)

    def _check_stream_order(self, tid, tmod, ref, cand):
        pristine = self._inputs(tmod, self.base_seed + 99, "task")
        cand_in, staged = self._clone(pristine), self._clone(pristine)
        _fill_nan(cand_in)
        self.sync()
        phase = "verify:stream order"
        self.begin(tid, "candidate", phase)
        torch.cuda._sleep(SLEEP_CYCLES)  # the inputs become ready on the caller's stream only after this
        _copy_into(cand_in, staged)
        try:
            out = self._cand_call(cand, cand_in, phase, sync=False)
        except Rejected as exc:  # out of memory: the candidate's verdict only where the reference fits instead
            cand_in = staged = None  # the reference gets the room the candidate's copies took
            raise self._out_of_memory(tid, ref, pristine, phase, exc) from None
        seen = [o.clone() if isinstance(o, torch.Tensor) else o for o in _flatten(out)]  # on the caller's stream
        self.sync()
        # every stream is done with them: the reference's clone gets their memory (45_Average_Pooling_2D's 16 GiB
        # input ran out beside three copies on the H100)
        cand_in = staged = None
        _, ref_out = self._reference(tid, ref, pristine, phase)
        for o, r in zip(seen, _flatten(ref_out)):
            problem = self._mismatch(o, r)
            if problem:
                raise Rejected(Verdict.STREAM_ORDER, f"{problem} when read on the caller's stream right after the call "
                               f"(work on another stream not ordered with the caller's)")
        return out, ref_out

    @staticmethod
    def _mismatch(o, r, tolerance=loosest_tolerance) -> str | None:
        """What is wrong with `o` against `r` (None: nothing), by `tolerance(dtype)` (atol = rtol); the reference's
        own non-finite values must be matched."""
        if not isinstance(r, torch.Tensor):
            return None if o == r else "wrong values"
        if not isinstance(o, torch.Tensor) or o.shape != r.shape or o.dtype != r.dtype:
            return "wrong shape or dtype"
        if not (o.is_floating_point() or o.is_complex()):
            return None if torch.equal(o, r) else "wrong values"
        ref_finite = compare.all_finite(r)
        if ref_finite and not compare.all_finite(o):
            return "NaN/Inf"
        if not ref_finite:
            extra, differ = compare.nonfinite_mismatches(o, r)
            if extra or differ:
                return "NaN/Inf" if extra else "wrong values where the reference is non-finite"
        tol = tolerance(r.dtype)  # the stream-order check: the loosest (ordering, not precision, is judged there)
        max_abs, _, tightest = compare.closeness(o, r, tol, finite_only=not ref_finite)
        if not tightest <= tol:
            return f"wrong values (max abs error {max_abs:.3g})"
        return None

    def _judge(self, out, ref_out, cand_in, pristine, ref_in, prev, errs, poisoned=False):
        outs, refs = _flatten(out), _flatten(ref_out)
        if errs.get("kernelbench_rule") is None:  # the first judged call, on the task's own inputs: the record says
            errs["kernelbench_rule"] = kernelbench_rule(outs, refs)  # what KernelBench would have made of the pair
        if len(outs) != len(refs):
            raise Rejected(Verdict.WRONG_SHAPE, f"{len(outs)} outputs, expected {len(refs)}")
        in_storages = {_storage(x) for x in cand_in if isinstance(x, torch.Tensor)}
        ref_in_storages = {_storage(x) for x in ref_in if isinstance(x, torch.Tensor)}
        for o, r in zip(outs, refs):
            if isinstance(o, torch.Tensor) and type(o) is torch.Tensor and isinstance(r, torch.Tensor) \
                    and _storage(o) in in_storages and _storage(r) not in ref_in_storages:
                raise Rejected(Verdict.RETURNED_INPUT)
        for x, p in zip(cand_in, pristine):
            if isinstance(x, torch.Tensor) and not (x.shape == p.shape and x.dtype == p.dtype and
                                                    compare.same_values(x, p)):
                raise Rejected(Verdict.MODIFIED_INPUTS)
        prev_storages, prev_refs, prev_outs = set(), [], []
        if prev is not None:
            prev_refs = _flatten(prev[1])
            ref_prev = {_storage(r) for r in prev_refs if isinstance(r, torch.Tensor)}
            try:
                prev_outs = _flatten(prev[0])
                prev_storages = {_storage(o) for o in prev_outs if isinstance(o, torch.Tensor)}
            except RuntimeError as exc:  # torch.compile's CUDA graphs free an output when the next call replays
                if OVERWRITTEN not in str(exc):
                    raise
                raise Rejected(Verdict.SAME_TENSOR, "the previous call's output was overwritten by this call "
                               "(torch.compile's CUDA graphs, mode='reduce-overhead', reuse their output memory): "
                               "clone the output before returning it") from None
            if any(_storage(r) in ref_prev for r in refs if isinstance(r, torch.Tensor)):
                prev_storages -= ref_prev  # the reference itself returns the same tensor every call
        for i, (o, r) in enumerate(zip(outs, refs)):
            if not isinstance(r, torch.Tensor):
                if o != r:
                    raise Rejected(Verdict.WRONG_VALUES)
                continue
            if not isinstance(o, torch.Tensor):
                raise Rejected(Verdict.WRONG_TYPE, f"{type(o).__name__}, expected a tensor")
            if type(o) is not torch.Tensor:
                raise Rejected(Verdict.TENSOR_SUBCLASS, f"{type(o).__name__}")
            if o.shape != r.shape:
                raise Rejected(Verdict.WRONG_SHAPE, f"{tuple(o.shape)}, expected {tuple(r.shape)}")
            if o.dtype != r.dtype:
                raise Rejected(Verdict.WRONG_DTYPE, f"{o.dtype}, expected {r.dtype}")
            if o.device != r.device:
                raise Rejected(Verdict.WRONG_DEVICE, f"{o.device}, expected {r.device}")
            if not (o.is_floating_point() or o.is_complex()):
                if not torch.equal(o, r):
                    raise Rejected(Verdict.WRONG_VALUES)
                continue
            if poisoned and o.is_floating_point() and o.element_size() in (2, 4, 8) and o.numel():
                as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[o.element_size()]
                unwritten = compare.count_pattern(o, r, as_int)
                if unwritten:
                    raise Rejected(Verdict.UNWRITTEN_OUTPUT, f"{unwritten} of {o.numel()} elements hold the pattern "
                                   f"written to free memory before the call")
            old = prev_refs[i] if i < len(prev_refs) else None
            self._judge_values(o, r, old, errs, i)
            if _storage(o) in prev_storages:
                raise Rejected(Verdict.SAME_TENSOR, "the output's storage is the previous call's (a "
                               "preallocated or constant output the next call overwrites)")
            if i < len(prev_outs) and self._repeated(o, prev_outs[i], r, old):
                raise Rejected(Verdict.STALE_RESULT, "the output is identical to the previous call's while the "
                               "reference's changed beyond the tolerance (an answer kept across calls), whatever "
                               "its error")

    @staticmethod
    def _repeated(o, prev_o, r, old) -> bool:
        """Whether `o` is bit for bit the previous call's output `prev_o` although the reference's output moved
        from `old` to `r` by more than twice the loosest tolerance: then no output within tolerance of both could
        be the same one (a coarse honest kernel may repeat itself where the reference moved less)."""
        if not (isinstance(prev_o, torch.Tensor) and isinstance(old, torch.Tensor)) or prev_o.shape != o.shape \
                or prev_o.dtype != o.dtype or old.shape != r.shape or not torch.equal(o, prev_o):
            return False
        tol = loosest_tolerance(r.dtype)
        return not compare.closeness(old, r, tol, finite_only=not compare.all_finite(r))[2] <= 2 * tol

    def _judge_values(self, o, r, old, errs, index: int = 0) -> None:
        """One floating-point output (the `index`-th) against the reference's: the reference's own non-finite values
        matched, then every profile's tolerance by the output's tightest (harness/tolerance.py) and, where the task's
        probe found that tolerance accepting a trivial output (kernelbench/trivial.py: rule `scale`), the
        scale-aware error too; the errors recorded in `errs`. Beyond the run's profile but within a looser one, the
        numerics are noted and the checks go on (the pair is timed for that profile); beyond every profile, `stale
        result` when it is `old` (the previous call's reference output), else `wrong values`."""
        ref_finite = compare.all_finite(r)
        if ref_finite and not compare.all_finite(o):
            raise Rejected(Verdict.NON_FINITE)
        if not ref_finite:  # the reference's own overflow or NaN on these inputs: matched, not blamed
            extra, differ = compare.nonfinite_mismatches(o, r)
            if extra:
                raise Rejected(Verdict.NON_FINITE, f"{extra} elements where the reference is finite")
            if differ:
                raise Rejected(Verdict.WRONG_VALUES, f"{differ} elements differ where the reference itself is "
                               f"non-finite (NaN expected for NaN, the same infinity for an infinity)")
            if NONFINITE_NOTE not in self.pair_notes:
                self.pair_notes.append(NONFINITE_NOTE)
        profile = self.s.get("tolerance_profile", "strict")
        tol = output_tolerance(r.dtype, profile)
        if not o.numel():
            return
        max_abs, rel, tightest = compare.closeness(o, r, tol, finite_only=not ref_finite)
        errs["max_abs_err"] = max(errs["max_abs_err"], max_abs)
        if rel >= errs["max_rel_err"]:  # the tolerance beside the error is the one that error is judged by
            errs["max_rel_err"], errs["tolerance"] = rel, tol
        errs["tightest"] = math.nan if math.isnan(tightest) else max(errs["tightest"], tightest)
        probes = getattr(self, "trivial_probes", None) or []
        probe = probes[index] if index < len(probes) else None
        rules = {p: probe.rule(output_tolerance(r.dtype, p)) if probe is not None else Rule.ALLCLOSE
                 for p in PROFILES}
        scale = scale_error(o, r) if Rule.SCALE in rules.values() else None
        if scale is not None:
            errs["scale_err"] = max(errs["scale_err"] or 0.0, scale) if not math.isnan(scale) else math.nan
        ok = {p: passes(p, r.dtype, tightest) and (rules[p] is not Rule.SCALE or  # a SCALE rule: `scale` was taken
                                                   scale is not None and scale <= output_tolerance(r.dtype, p))
              for p in PROFILES}
        for p in PROFILES:
            errs["passes"][p] = errs["passes"][p] and ok[p]
        if ok[profile]:
            return
        if passes(profile, r.dtype, tightest):  # within atol = rtol, which here would also accept a trivial output
            assert probe is not None  # so the profile's rule was the probe's SCALE, which failed
            failure = (f"scale-aware error max |o - r| / (|r| + rms(r)) = {scale:.3g} exceeds {tol:g}: atol=rtol="
                       f"{tol:g} alone would also accept {' or '.join(probe.passing(tol, False))} on this task")
        else:
            failure = f"max abs error {max_abs:.3g} exceeds the {r.dtype} tolerance (atol=rtol={tol:g}" + \
                (f", the {profile} profile)" if profile != "strict" else ")")
        if any(errs["passes"].values()):  # a looser profile passes: go on, so that it gets its times
            errs["numerics"] = errs["numerics"] or failure
            return
        if isinstance(old, torch.Tensor) and old.shape == o.shape and old.dtype == o.dtype \
                and (compare.allclose(o, old, tol, tol) if rules[profile] is not Rule.SCALE
                     else scale_error(o, old) <= tol):
            raise Rejected(Verdict.STALE_RESULT, "the output is the previous call's answer (cached across calls by "
                           "pointer, id or a content fingerprint)")
        raise Rejected(Verdict.WRONG_VALUES, failure)
