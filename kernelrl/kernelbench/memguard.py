"""Poisoned free memory and guard regions around a candidate's checked calls (CUDA only), for the KernelBench
worker.

A KernelBench candidate allocates its own outputs, so the HGEMM evaluator's NaN-filled output and guard bands do not
apply as such. Instead, before a checked call, every free block of PyTorch's caching allocator is filled with the
byte 0xFF (a NaN in every float format, a pattern no arithmetic produces on the GPU): whatever the candidate
allocates comes from poisoned memory, so an output element it never wrote holds the pattern (`unwritten output`),
and an answer left behind in recycled memory by an earlier computation is gone.

To make that placement deterministic, the guard first "plugs" every free block that could serve an allocation
(tensors allocated to fill them exactly, released after the call), then allocates and frees one fresh arena (and
one small-pool segment): the candidate's allocations are carved from the start of the arena, with poisoned free
memory behind them. With `check=True`, the allocator's history records every block the call allocates; afterwards
every byte of poisoned memory outside those blocks must still hold the pattern, else the call wrote where it owned
nothing (`out-of-bounds write`).

Only the default pool of the current device and stream is touched (CUDA-graph pools and expandable segments are
left alone), and only after a device-wide synchronize, so nothing in flight uses the memory being filled.
`subtract` and `free_blocks` are pure functions over the allocator snapshot's plain dicts (tested on the CPU)."""

from __future__ import annotations

from kernelrl.harness.verdicts import Rejected, Verdict

POISON_BYTE = 0xFF
SMALL_SIZE = 1 << 20  # the caching allocator's largest "small" allocation (kSmallSize)
MIN_ARENA = 32 << 20
MAX_CHECKED = 2 << 30  # the arena's size and the free memory compared after an out-of-bounds-checked call, at most
# (a larger arena's unused part stays stuck beside the call's outputs: a 16 GB task then runs out of memory)
CHUNK = 256 << 20  # compared this much at a time, so the host never holds more


def subtract(ranges: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of half-open [start, end) `ranges` that no hole covers, sorted."""
    holes = sorted((a, b) for a, b in holes if b > a)
    out = []
    for start, end in sorted(ranges):
        cur = start
        for a, b in holes:
            if b <= cur or a >= end:
                continue
            if a > cur:
                out.append((cur, a))
            cur = max(cur, b)
            if cur >= end:
                break
        if cur < end:
            out.append((cur, end))
    return out


def free_blocks(segments: list[dict], device: int, stream: int | None = None) -> list[tuple[int, int, str]]:
    """(address, size, pool) of the inactive blocks of the default pool on `device` (and `stream`, if given) in a
    `torch.cuda.memory_snapshot()`; pool is "small" or "large". Block addresses follow from the segment's address and
    the sizes of the blocks before it (blocks are listed in address order)."""
    out = []
    for seg in segments:
        if seg.get("device", device) != device or seg.get("is_expandable"):
            continue
        if tuple(seg.get("segment_pool_id", (0, 0)) or (0, 0)) != (0, 0):
            continue
        if stream is not None and seg.get("stream", stream) != stream:
            continue
        addr = seg["address"]
        for block in seg["blocks"]:
            if block.get("state") == "inactive" and block["size"] > 0:
                out.append((addr, block["size"], seg.get("segment_type", "large")))
            addr += block["size"]
    return out


def pluggable(blocks: list[tuple[int, int, str]]) -> list[int]:
    """Sizes of the free blocks an allocation of the same size lands in exactly (ascending): small-pool blocks up
    to 1 MiB, large-pool blocks above it. Other free blocks can serve no request of the candidate's that they
    would not also serve poisoned."""
    return sorted(size for _, size, pool in blocks
                  if (pool == "small" and size <= SMALL_SIZE) or (pool != "small" and size > SMALL_SIZE))


COUNT_STEP = 32 << 20  # bytes counted a pass: a boolean count casts to int64, 8 bytes an element (256 MB here)


def _count_unpoisoned(view) -> int:
    """Bytes of a uint8 view that differ from the poison, counted COUNT_STEP at a time (one pass over a 256 MB
    region would make a 2 GB int64 temporary)."""
    return sum(int((view[i:i + COUNT_STEP] != POISON_BYTE).sum()) for i in range(0, view.numel(), COUNT_STEP))


# allocator-history actions that hand a segment back to the driver: what lay there is no longer the guard's to read
RELEASED = ("segment_free", "segment_unmap")


def compared_regions(ranges: list[tuple[int, int]], trace: list[dict], budget: int = MAX_CHECKED,
                     chunk: int = CHUNK) -> tuple[list[tuple[int, int]], int]:
    """(the (address, size) regions of the poisoned `ranges` an out-of-bounds check compares, the poisoned bytes it
    cannot): every range minus the blocks the call allocated (`trace`: the allocator's history during the call) and
    minus the segments the call released to the driver (torch.cuda.empty_cache, a CUDA graph's capture: reading them
    would be an illegal address, or a new segment's unpoisoned memory mapped at the same address). At most `budget`
    bytes, nearest each range's start first (writes past a buffer's end land next to it), in `chunk`-sized regions."""
    owned = [(e["addr"], e["addr"] + e["size"]) for e in trace if e.get("action") == "alloc"]
    released = [(e["addr"], e["addr"] + e["size"]) for e in trace if e.get("action") in RELEASED]
    kept = subtract(ranges, owned)
    readable = subtract(kept, released)
    lost = sum(b - a for a, b in kept) - sum(b - a for a, b in readable)
    regions = []
    for a, b in readable:
        for start in range(a, min(b, a + budget), chunk):
            regions.append((start, min(chunk, b - start, a + budget - start)))
        budget -= min(budget, b - a)
        if budget <= 0:
            break
    return regions, lost


class _Raw:
    """A raw device range seen as a uint8 tensor through the CUDA array interface (no allocation, no copy)."""

    def __init__(self, addr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (addr, False),
                                         "version": 2}


class MemoryGuard:
    def __init__(self, torch, device, sync=None) -> None:
        self.torch = torch
        self.sync = sync or torch.cuda.synchronize  # the caller's captured synchronize
        self.device = device
        self.index = device.index if device.index is not None else torch.cuda.current_device()
        self.plugs: list = []
        self.ranges: list[tuple[int, int]] = []
        self.check = False
        self.trace_base = 0
        self.note: str | None = None  # what the out-of-bounds check could not do as designed, if anything

    def _view(self, addr: int, nbytes: int):
        return self.torch.as_tensor(_Raw(addr, nbytes))

    def _trace(self) -> list[dict]:
        traces = self.torch.cuda.memory._snapshot().get("device_traces") or []
        return list(traces[self.index]) if len(traces) > self.index else []

    def arm(self, arena_bytes: int, check: bool = False) -> None:
        t = self.torch
        self.sync()
        t.cuda.empty_cache()
        stream = t.cuda.current_stream().cuda_stream
        sizes = pluggable(free_blocks(t.cuda.memory_snapshot(), self.index, stream))
        self.plugs = [t.empty(size, dtype=t.uint8, device=self.device) for size in sizes]
        arena = t.empty(max(MIN_ARENA, min(int(arena_bytes), MAX_CHECKED)), dtype=t.uint8, device=self.device)
        small = t.empty(SMALL_SIZE, dtype=t.uint8, device=self.device)
        del arena, small
        self.ranges = [(a, a + n) for a, n, _ in free_blocks(t.cuda.memory_snapshot(), self.index)]
        for a, b in self.ranges:
            self._view(a, b - a).fill_(POISON_BYTE)
        self.sync()
        self.check = False
        if check:
            try:
                t.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                                     max_entries=1_000_000)
                self.trace_base = len(self._trace())
                self.check = True
            except Exception as exc:  # no allocator history in this torch: poison only
                self.check = False
                self.note = f"no out-of-bounds check (allocator history: {type(exc).__name__}: {exc})"[:300]

    def _plug_everything(self) -> list:
        """Allocate every free block of the current stream's pools, so that whatever is allocated next comes from
        fresh memory: each block exactly where an allocation of its size lands in it (`pluggable`), a small-pool
        block larger than the small pool's largest request (a whole free 2 MB segment) in 1 MB pieces, the
        remainders in the next pass."""
        t = self.torch
        stream = t.cuda.current_stream().cuda_stream
        plugs: list = []
        for _ in range(8):
            blocks = free_blocks(t.cuda.memory_snapshot(), self.index, stream)
            sizes = pluggable(blocks)
            sizes += [SMALL_SIZE] * sum(size // SMALL_SIZE for _, size, pool in blocks
                                        if pool == "small" and size > SMALL_SIZE)
            if not sizes:
                break
            plugs += [t.empty(size, dtype=t.uint8, device=self.device) for size in sizes]
        return plugs

    def _count_changed(self, regions: list[tuple[int, int]]) -> int:
        """Bytes of the (address, size) regions that no longer hold the poison. Compared on the device, after every
        free block is plugged: the comparison's own temporaries then come from memory outside the poisoned ranges
        (unplugged, they would land inside them and flag themselves, as the first H200 run showed on every
        candidate). Where no memory is left for them, on the host (the same answer, about 1 s per GB slower)."""
        plugs = self._plug_everything()
        try:
            return sum(_count_unpoisoned(self._view(start, size)) for start, size in regions)
        except RuntimeError:  # out of memory for the temporaries
            del plugs
            self.note = ("out-of-bounds comparison on the host: no device memory was left for its temporaries (the "
                         "same answer, slower)")
            return sum(_count_unpoisoned(self._view(start, size).cpu()) for start, size in regions)

    def disarm(self) -> Rejected | None:
        """Release the plugs; with `check`, the out-of-bounds verdict (None when the poison is intact)."""
        t = self.torch
        message = None
        try:
            self.sync()
            if self.check:
                regions, lost = compared_regions(self.ranges, self._trace()[self.trace_base:])
                if lost:
                    self.note = (f"the call released {lost} bytes of poisoned memory to the driver (torch.cuda."
                                 f"empty_cache, a CUDA graph's capture): the out-of-bounds check compared the rest")
                changed = self._count_changed(regions)
                if changed:
                    message = Rejected(Verdict.OUT_OF_BOUNDS, f"{changed} bytes of free memory changed outside "
                                                              f"every block the call allocated")
        finally:
            if self.check:
                try:
                    t.cuda.memory._record_memory_history(enabled=None)
                except Exception:
                    pass
            self.check = False
            self.plugs = []
            self.ranges = []
        return message
