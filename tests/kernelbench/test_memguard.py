"""The KernelBench memory guard on the CPU: range arithmetic, reading the allocator's snapshot, and the guard's
arm/disarm logic against a toy caching allocator over a CPU byte array (the real allocator is exercised on the GPU
by tests/gpu/test_kernelbench_gpu.py: recycled_memory and oob_write)."""

import pytest
import torch

from kernelrl.kernelbench import memguard
from kernelrl.kernelbench.memguard import SMALL_SIZE, free_blocks, pluggable, subtract

MB = 1 << 20


@pytest.mark.parametrize("ranges, holes, expected", [
    ([(0, 100)], [], [(0, 100)]),
    ([(0, 100)], [(0, 100)], []),
    ([(0, 100)], [(10, 20), (50, 60)], [(0, 10), (20, 50), (60, 100)]),
    ([(0, 100)], [(50, 60), (10, 20)], [(0, 10), (20, 50), (60, 100)]),  # holes in any order
    ([(0, 100)], [(-5, 10), (90, 200)], [(10, 90)]),  # holes overhanging either end
    ([(0, 100), (200, 300)], [(80, 220)], [(0, 80), (220, 300)]),  # one hole across two ranges
    ([(0, 100)], [(10, 30), (20, 40)], [(0, 10), (40, 100)]),  # overlapping holes
    ([(0, 100)], [(30, 30)], [(0, 100)]),  # an empty hole
])
def test_subtract(ranges, holes, expected):
    assert subtract(ranges, holes) == expected


def segment(address, blocks, device=0, stream=0, kind="large", pool=(0, 0), expandable=False):
    return {"device": device, "address": address, "stream": stream, "segment_type": kind,
            "segment_pool_id": pool, "is_expandable": expandable,
            "blocks": [{"size": size, "state": state} for size, state in blocks]}


def test_free_blocks_follow_the_block_sizes_in_address_order():
    segs = [segment(1000, [(512, "active_allocated"), (1024, "inactive"), (512, "active_pending_free"),
                           (2048, "inactive")], kind="small")]
    assert free_blocks(segs, 0) == [(1512, 1024, "small"), (3048, 2048, "small")]


def test_free_blocks_skip_other_devices_pools_streams_and_expandable_segments():
    segs = [segment(0, [(4 * MB, "inactive")], device=1),
            segment(10 * MB, [(4 * MB, "inactive")], pool=(1, 7)),
            segment(20 * MB, [(4 * MB, "inactive")], expandable=True),
            segment(30 * MB, [(4 * MB, "inactive")], stream=99),
            segment(40 * MB, [(4 * MB, "inactive")])]
    assert free_blocks(segs, 0, stream=0) == [(40 * MB, 4 * MB, "large")]
    assert [a for a, _, _ in free_blocks(segs, 0)] == [30 * MB, 40 * MB]


def test_pluggable_sizes_are_those_an_allocation_lands_in_exactly():
    blocks = [(0, 512, "small"), (0, SMALL_SIZE, "small"), (0, SMALL_SIZE + 512, "small"),
              (0, 512 * 1024, "large"), (0, SMALL_SIZE + 512, "large"), (0, 20 * MB, "large")]
    assert pluggable(blocks) == [512, SMALL_SIZE, SMALL_SIZE + 512, 20 * MB]


# -- MemoryGuard against a toy caching allocator (best fit, splitting, per-block free) on a CPU byte array ---------
class _Block:
    def __init__(self, size, state="inactive"):
        self.size, self.state = size, state


class _Buffer:
    """What the toy allocator hands out: freed when dropped, like a tensor's storage."""

    def __init__(self, alloc, addr, block):
        self.alloc, self.addr, self.block = alloc, addr, block

    def __del__(self):
        self.block.state = "inactive"
        self.alloc.merge()


class _ToyAllocator:
    """Two pools, as PyTorch's: requests up to 1 MiB from 2 MiB "small" segments, larger ones from "large"
    segments of their own size (at least 2 MiB); best fit within the request's pool."""

    def __init__(self, torch):
        self.torch = torch
        self.memory = torch.zeros(64 * MB, dtype=torch.uint8)
        self.segments: list[tuple[int, list[_Block], str]] = []
        self.next_addr = 4096
        self.history: list[dict] | None = None

    def merge(self):
        for _, blocks, _kind in self.segments:
            i = 0
            while i + 1 < len(blocks):
                if blocks[i].state == blocks[i + 1].state == "inactive":
                    blocks[i].size += blocks.pop(i + 1).size
                else:
                    i += 1

    def empty(self, size, dtype=None, device=None):
        size = -(-max(size, 512) // 512) * 512
        kind = "small" if size <= MB else "large"
        best = None
        for addr, blocks, seg_kind in self.segments:
            if seg_kind != kind:
                continue
            for i, b in enumerate(blocks):
                start = addr + sum(x.size for x in blocks[:i])
                if b.state == "inactive" and b.size >= size and (best is None or b.size < best[2].size):
                    best = (blocks, i, b, start)
        if best is None:
            seg = 2 * MB if kind == "small" else max(size, 2 * MB)
            self.segments.append((self.next_addr, [_Block(seg)], kind))
            self.next_addr += seg
            return self.empty(size)
        blocks, i, b, start = best
        if b.size > size:
            blocks.insert(i + 1, _Block(b.size - size))
            b.size = size
        b.state = "active_allocated"
        if self.history is not None:
            self.history.append({"action": "alloc", "addr": start, "size": size})
        return _Buffer(self, start, b)

    def snapshot(self):
        return [{"device": 0, "address": a, "stream": 0, "segment_type": kind, "segment_pool_id": (0, 0),
                 "is_expandable": False, "blocks": [{"size": b.size, "state": b.state} for b in blocks]}
                for a, blocks, kind in self.segments]

    def empty_cache(self):
        kept = [(a, bl, k) for a, bl, k in self.segments if any(b.state != "inactive" for b in bl)]
        for a, bl, _ in self.segments:
            if self.history is not None and all(b.state == "inactive" for b in bl):
                self.history.append({"action": "segment_free", "addr": a, "size": sum(b.size for b in bl)})
        self.segments = kept

    def mapped(self, addr, n):
        """Whether [addr, addr + n) lies in one segment (reading anything else on a GPU is an illegal address)."""
        return any(a <= addr and addr + n <= a + sum(b.size for b in bl) for a, bl, _ in self.segments)


@pytest.fixture
def toy():
    import types

    import torch
    alloc = _ToyAllocator(torch)
    memory_mod = types.SimpleNamespace(
        _record_memory_history=lambda enabled=None, **kw: setattr(alloc, "history", [] if enabled else None),
        _snapshot=lambda: {"segments": alloc.snapshot(), "device_traces": [list(alloc.history or [])]})
    cuda = types.SimpleNamespace(
        memory_snapshot=alloc.snapshot, empty_cache=alloc.empty_cache, memory=memory_mod, current_device=lambda: 0,
        current_stream=lambda: types.SimpleNamespace(cuda_stream=0), synchronize=lambda: None)

    def as_tensor(raw):
        i = raw.__cuda_array_interface__
        addr, n = i["data"][0], i["shape"][0]
        if not alloc.mapped(addr, n):
            raise AssertionError(f"read of {n} bytes at {addr}: not in any segment (an illegal address on a GPU)")
        return alloc.memory[addr:addr + n]

    fake = types.SimpleNamespace(cuda=cuda, empty=alloc.empty, uint8=torch.uint8, as_tensor=as_tensor)
    return alloc, fake


def _guard(fake):
    import types

    from kernelrl.kernelbench.memguard import MemoryGuard
    return MemoryGuard(fake, types.SimpleNamespace(index=0), sync=lambda: None)


@pytest.mark.parametrize("overrun, expected", [(0, None), (4096, "out-of-bounds write: 4096 bytes")])
def test_guard_poisons_free_memory_and_sees_writes_outside_the_calls_blocks(toy, overrun, expected):
    alloc, fake = toy
    keep = alloc.empty(3 * MB)  # a live tensor of the harness's, and a free hole beside it
    hole = alloc.empty(2 * MB)
    del hole
    guard = _guard(fake)
    guard.arm(4 * MB, check=True)
    out = alloc.empty(1 * MB)  # the candidate's output: carved from poisoned memory
    assert bool((alloc.memory[out.addr:out.addr + MB] == 0xFF).all())
    alloc.memory[out.addr:out.addr + MB + overrun] = 7  # its kernel, with or without an overrun
    message = guard.disarm()
    assert str(message or "").startswith(expected or "") and (message is None) == (expected is None), message
    assert message is None or message.verdict.value == "out-of-bounds write"
    assert guard.plugs == [] and alloc.history is None and keep.block.state == "active_allocated"


def test_guard_leaves_live_tensors_alone(toy):
    alloc, fake = toy
    live = alloc.empty(1 * MB)
    alloc.memory[live.addr:live.addr + MB] = 3
    guard = _guard(fake)
    guard.arm(0)
    assert bool((alloc.memory[live.addr:live.addr + MB] == 3).all())
    assert guard.disarm() is None


def test_the_comparisons_own_temporaries_do_not_flag_themselves(toy):
    """The out-of-bounds comparison runs on the device and allocates: every free block is plugged first, so its
    temporaries come from memory outside the poisoned ranges and the poison it reads is intact."""
    alloc, fake = toy
    guard = _guard(fake)
    guard.arm(4 * MB, check=True)
    out = alloc.empty(2 * MB)  # from the arena: the small pool's segment stays whole and free
    alloc.memory[out.addr:out.addr + 2 * MB] = 7
    view = guard._view
    temporaries = []

    def view_with_a_temporary(addr, nbytes):
        for size in (2 * MB, 12 * 1024):  # what a device comparison allocates: its mask, a reduction's buffer
            scratch = alloc.empty(size)
            alloc.memory[scratch.addr:scratch.addr + size] = 0
            temporaries.append(scratch)
        return view(addr, nbytes)

    guard._view = view_with_a_temporary
    assert guard.disarm() is None and temporaries


def test_a_comparison_with_no_device_memory_left_runs_on_the_host_and_says_so(toy):
    alloc, fake = toy
    guard = _guard(fake)
    guard.arm(4 * MB, check=True)
    out = alloc.empty(2 * MB)
    alloc.memory[out.addr:out.addr + 2 * MB + 4096] = 7  # an overrun the host comparison must still see
    view = guard._view

    class DeviceView:  # a comparison on the device runs out of memory; its host copy compares
        def __init__(self, t):
            self.t = t

        def __ne__(self, other):
            raise RuntimeError("CUDA out of memory")

        def numel(self):
            return self.t.numel()

        def __getitem__(self, k):
            return DeviceView(self.t[k])

        def cpu(self):
            return self.t

    guard._view = lambda addr, nbytes: DeviceView(view(addr, nbytes))
    message = guard.disarm()
    assert message is not None and message.verdict.value == "out-of-bounds write"
    assert "on the host" in guard.note


@pytest.mark.parametrize("overrun, expected", [(0, None), (4096, "out-of-bounds write: 4096 bytes")])
def test_a_call_that_releases_the_cache_is_compared_where_memory_is_still_mapped(toy, overrun, expected):
    """torch.cuda.empty_cache inside the call (a CUDA graph's capture does it) hands the free arena back to the
    driver: the check reads only what is still mapped (reading the rest is an illegal address: one suspected cause
    of compiled_reduce_overhead's crash on the H100), says so, and still sees an overrun of a block that stayed."""
    alloc, fake = toy
    guard = _guard(fake)
    guard.arm(4 * MB, check=True)
    out = alloc.empty(1 * MB + 512)  # the candidate's output, carved from the arena: that segment stays mapped
    fake.cuda.empty_cache()  # then the release: the small pool's free segment goes back to the driver
    alloc.memory[out.addr:out.addr + MB + 512 + overrun] = 7  # an overrun lands in the arena's poisoned rest
    message = guard.disarm()
    assert str(message or "").startswith(expected or "") and (message is None) == (expected is None), message
    assert f"released {2 * MB} bytes" in (guard.note or "")


def test_compared_regions_leave_out_the_calls_blocks_and_released_segments():
    trace = [{"action": "alloc", "addr": 100, "size": 50},
             {"action": "segment_free", "addr": 300, "size": 200},
             {"action": "segment_unmap", "addr": 900, "size": 100}]
    regions, lost = memguard.compared_regions([(0, 1000)], trace, budget=10_000, chunk=250)
    assert regions == [(0, 100), (150, 150), (500, 250), (750, 150)]
    assert lost == 300


def test_compared_regions_stop_at_the_budget_nearest_each_range_first():
    regions, lost = memguard.compared_regions([(0, 100), (200, 300)], [], budget=150, chunk=64)
    assert regions == [(0, 64), (64, 36), (200, 50)] and lost == 0


def test_changed_bytes_are_counted_a_step_at_a_time_with_the_same_answer(monkeypatch):
    # a boolean count over a whole 256 MB region would make a 2 GB int64 temporary beside the poisoned memory
    monkeypatch.setattr(memguard, "COUNT_STEP", 7)
    view = torch.full((100,), memguard.POISON_BYTE, dtype=torch.uint8)
    view[[0, 6, 7, 99]] = 3  # at a step's start and end, across a step boundary, in the last partial step
    assert memguard._count_unpoisoned(view) == 4
    assert memguard._count_unpoisoned(view[:0]) == 0
