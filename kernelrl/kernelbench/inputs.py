"""The inputs a KernelBench candidate is checked and timed on (the worker's `InputsMixin`): the task's own draw for a
seed on the evaluation device or a uniform one over the same range, clones, secret perturbations (near duplicates,
every timed call's fresh inputs), a smaller batch; all keeping the draw's zeros and symmetry (`_structure`); and
`Held`, the outputs kept alive after their checks. Runs only in the worker process."""

from __future__ import annotations

import math
import random
import weakref
from typing import TYPE_CHECKING

import torch

from kernelrl.harness import compare

PERTURBED = 8  # elements changed per floating input tensor in near-duplicate and timed inputs


def _flatten(out) -> list:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flatten(o)]
    return [out]


def _storage(t) -> int:
    return t.untyped_storage().data_ptr()


def _structure(x) -> tuple[bool, bool]:
    """(whether the draw has exact zeros, whether its last two dims are a symmetric matrix): what a task's own draw
    promises beyond its range (torch.triu / torch.tril / masked inputs; (A + A.T) / 2), which a candidate may rely
    on as the task's text does, so the evaluator's other draws keep it (a zero stays zero, symmetry stays)."""
    has_zeros = not compare.all_where(torch.all, x)  # in chunks: a whole-tensor count casts to int64 (8x)
    symmetric = x.dim() >= 2 and x.shape[-1] == x.shape[-2] > 1 and _symmetric(x)
    return has_zeros, symmetric


def _symmetric(x) -> bool:
    """Whether every matrix of `x`'s last two dims equals its transpose, a block of matrices at a time (torch.equal
    over the whole tensor makes a boolean temporary of its size)."""
    n = x.shape[-1]
    mats = x.reshape(-1, n, n)
    step = max(1, compare.CHUNK_ELEMENTS // (n * n))
    return all(torch.equal(m, m.mT) for m in mats.split(step))


_POOL_STRUCTURES: dict[int, tuple] = {}  # id(pool tensor) -> (weak reference to it, its _structure)


def _pool_structure(x):
    """`_structure` of a pool's input tensor, computed once while the tensor lives (None for other inputs). Keyed
    by id, checked through a weak reference: a later tensor that reuses the id is read afresh."""
    if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1 and x.dim() > 0):
        return None
    held = _POOL_STRUCTURES.get(id(x))
    if held is None or held[0]() is not x:
        for key in [k for k, (ref, _) in _POOL_STRUCTURES.items() if ref() is None]:
            del _POOL_STRUCTURES[key]  # tensors freed since: their entries go
        held = _POOL_STRUCTURES[id(x)] = (weakref.ref(x), _structure(x))
    return held[1]


def host_copy(x):
    """A copy of device tensor `x` in pinned host memory: copies both ways run at the link's speed (the H100 run's
    pageable copies, fresh pages each time, took most of a 12 GiB task's 117 s), and torch caches the blocks, so the
    next copy of the same size reuses them (`KBWorker._release_pinned` returns them between tasks). Pageable where
    pinning fails or `x` is not contiguous."""
    if x.is_contiguous():
        try:
            return torch.empty(x.shape, dtype=x.dtype, pin_memory=True).copy_(x)
        except RuntimeError:
            pass
    return x.to("cpu", copy=True)


def redraw_bytes(inputs) -> int:
    """The device bytes beside an input set while `_inputs` redraws its largest floating tensor uniformly: a float32
    buffer, a mask of its zeros, the cast to its dtype (and, for a symmetric matrix, the symmetrised buffer; on the
    meta device, where values are unknown, no matrix is taken for symmetric)."""
    most = 0
    for x in _flatten(inputs):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            n = x.numel()
            extra = 4 * n + n + (n * x.element_size() if x.element_size() != 4 else 0)
            if x.dim() >= 2 and x.shape[-1] == x.shape[-2] > 1 and x.device.type != "meta" and _structure(x)[1]:
                extra += 4 * n
            most = max(most, extra)
    return most


def module_tensors(model) -> list:
    """The tensors a model owns: parameters, buffers and tensor attributes of each submodule."""
    out = list(model.parameters()) + list(model.buffers())
    for m in model.modules():
        out += [v for v in vars(m).values() if isinstance(v, torch.Tensor)]
    return out


def model_bytes(model) -> int:
    """The bytes of a model's own tensors, each storage once."""
    seen = {}
    for t in module_tensors(model):
        if t.device.type != "meta":
            seen[_storage(t)] = t.untyped_storage().nbytes()
    return sum(seen.values())


class Held:
    """Candidate outputs kept alive after their checks, oldest dropped first beyond `budget` bytes."""

    def __init__(self, budget: int):
        self.budget, self.bytes = budget, 0
        self.items: list[tuple[object, int]] = []  # (output, its bytes)

    def add(self, pair) -> None:
        if pair is None:
            return
        out = pair[0]  # the candidate's output; the reference's is not needed once judged
        size = InputsMixin._nbytes(out)
        self.items.append((out, size))
        self.bytes += size
        while self.bytes > self.budget and len(self.items) > 1:
            self.bytes -= self.items.pop(0)[1]


class InputsMixin:
    """KBWorker's inputs (it sets `device` and `rng`: kernelrl/kernelbench/worker_process.py)."""

    if TYPE_CHECKING:  # for the type checker only: the guards watch the class's names
        device: torch.device
        rng: random.Random

    def _inputs(self, mod, seed: int, dist: str, host: bool | None = None) -> list:
        """The task's inputs for a seed, made on the evaluation device: get_inputs runs with that device as torch's
        default, so a task's multi-GB random tensors are drawn by the GPU, not by one CPU core (seconds per check
        on level-1 tasks). A get_inputs that cannot run that way is called as it is, on the CPU. With `host` (by
        default `spill_inputs`: during the checks, where the task's memory plan keeps pristine copies on the host,
        kernelbench/memory_plan.py) the set is returned in host memory; `_clone` copies it back to the device."""
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):
                raw = list(mod.get_inputs())
        except Exception:
            torch.manual_seed(seed)
            raw = list(mod.get_inputs())
        out = []
        gen = torch.Generator(device=self.device).manual_seed(seed ^ 0x5A5A)
        for k, x in enumerate(raw):
            raw[k] = None  # each drawn tensor is freed once redrawn: one input set and one tensor's redraw at most
            if isinstance(x, torch.Tensor):
                x = x.to(self.device)
                if dist == "uniform" and x.is_floating_point() and x.numel() > 1:
                    x = self._uniform_like(x, gen)
            out.append(x)
        spill = getattr(self, "spill_inputs", False) if host is None else host
        if spill and torch.device(self.device).type == "cuda":
            return self._to_host(out)  # memory_plan: pristine copies kept on the host, cloned to the device
        return out

    @staticmethod
    def _uniform_like(x, gen):
        """Uniform values over the range the task's own draw spans: another distribution (a candidate tuned to the
        task's cannot tell it from its own by sign or scale), yet inside the task's domain (log of a probability,
        sqrt of a variance), where inputs of the wrong sign would make the reference itself NaN."""
        lo, hi = float(x.min()), float(x.max())
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi:
            return x
        has_zeros, symmetric = _structure(x)
        u = torch.rand(x.shape, generator=gen, dtype=torch.float32, device=x.device)
        if symmetric:
            u = (u + u.mT).div_(2)
        out = u.mul_(hi - lo).add_(lo).clamp_(lo, hi).to(x.dtype)  # in place: one float32 buffer beside x
        if has_zeros:
            out.masked_fill_(x == 0, 0)
        return out

    def _clone(self, inputs: list) -> list:
        """A copy of the inputs on the evaluation device (a set kept on the host is copied back)."""
        device = torch.device(self.device)
        return [(x.clone() if x.device.type == device.type else x.to(device, copy=True))
                if isinstance(x, torch.Tensor) else x for x in inputs]

    @staticmethod
    def _to_host(inputs: list) -> list:
        """A copy of the device tensors in host memory (`host_copy`)."""
        return [host_copy(x) if isinstance(x, torch.Tensor) and x.device.type == "cuda" else x for x in inputs]

    def _perturb(self, inputs: list, structures: list | None = None) -> None:
        """Set a few elements (secret positions) of each floating input to the tensor's max or min: in the
        inputs' own range, and enough to change a max/min reduction. The draw's structure is kept (`_structure`,
        or each input's from `structures` where the caller knows it): an element the task drew as exactly zero
        stays zero, a symmetric matrix stays symmetric."""
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1 and x.dim() > 0:
                hi, lo = x.max(), x.min()
                has_zeros, symmetric = structures[i] if structures is not None else _structure(x)
                for j in range(PERTURBED):
                    for _ in range(16):  # a position the task drew as nonzero (a triangle's own half)
                        at = tuple(self.rng.randrange(n) for n in x.shape)
                        if not has_zeros or bool(x[at] != 0):
                            break
                    else:
                        continue
                    x[at] = hi if j % 2 == 0 else lo
                    if symmetric:
                        x[at[:-2] + (at[-1], at[-2])] = x[at]

    @staticmethod
    def _nbytes(tensors) -> int:
        return sum(t.numel() * t.element_size() for t in _flatten(tensors) if isinstance(t, torch.Tensor))

    def _vary_batch(self, inputs: list) -> list | None:
        """The inputs with dim 0 cut to about half, when every tensor input shares a dim 0 of at least 2."""
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        if not tensors or any(x.dim() == 0 for x in tensors):
            return None
        b = tensors[0].shape[0]
        if b < 2 or any(x.shape[0] != b for x in tensors):
            return None
        nb = b // 2 + 1 if b > 3 else b - 1
        return [x[:nb].contiguous() if isinstance(x, torch.Tensor) else x for x in inputs]

    def _pool_set(self, mod, seed: int, host: bool) -> list:
        """One of the timing pool's input sets (the task's distribution); in host memory where `host` (the memory
        plan's `pool_on_host`), its structure read on the device before it moves (one pass there, not on the CPU)."""
        xs = self._inputs(mod, seed, "task", host=False)
        if not host or torch.device(self.device).type != "cuda":
            return xs
        structures = [_pool_structure(x) for x in xs]
        kept = self._to_host(xs)
        for x, structure in zip(kept, structures):
            if structure is not None:
                _POOL_STRUCTURES[id(x)] = (weakref.ref(x), structure)
        return kept

    def _fresh(self, pool, k) -> list:
        """Call k's inputs: a clone of one input set with a few elements changed (no two calls alike). The set's
        structure is read once per pool tensor, not on every call's clone (a pass and a sync over inputs of
        gigabytes)."""
        source = pool[k % len(pool)]
        structures = [_pool_structure(x) for x in source]
        xs = self._clone(source)
        self._perturb(xs, structures)
        return xs

