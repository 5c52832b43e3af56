"""The device-side timing primitives every GPU measurement uses: capture back-to-back calls in a CUDA graph, and
time one replay with events on the caller's stream inside a synchronized host window (the event time is the
measurement; the wall time is what the hidden-work rule compares it with). The HGEMM worker's device mode, its
content probe and the cuBLASLt autotuning search all time graphs through these two functions.

Host-timed modes (offline, server, KernelBench) time single calls with a device-wide synchronize around each; the
KernelBench worker does so with clocks and events captured before any candidate code runs, so it keeps its own
loop."""

from __future__ import annotations

import time
from typing import Callable

import torch

from kernelrl.harness.verdicts import Rejected, Verdict


def capture(calls: list[Callable[[], int]], stream: torch.cuda.Stream) -> tuple[torch.cuda.CUDAGraph, list]:
    """A graph of the calls, in order, captured on `stream`; the calls' return codes (0 = ok) come back too."""
    graph = torch.cuda.CUDAGraph()
    codes = []
    with torch.cuda.graph(graph, stream=stream):
        for call in calls:
            codes.append(call())
    return graph, codes


def timed_replay(graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream,
                 sync: Callable[[], None] = torch.cuda.synchronize) -> tuple[float, float]:
    """(event µs, wall µs) of one replay: `sync` before and after, events on `stream` around the replay."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.cuda.stream(stream):  # a graph replays on the current stream
        start.record()
        graph.replay()
        end.record()
    sync()
    wall = (time.perf_counter() - t0) * 1e6
    return start.elapsed_time(end) * 1e3, wall


def host_window(call: Callable[[], int], stream: torch.cuda.Stream) -> tuple[int, float, float]:
    """(return code, wall µs, event µs) of one call with stream events inside the host-clock window: the wall time
    less the event time is the call's host-side overhead (how the hidden-work check sees work done off `stream`)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    start.record(stream)
    rc = call()
    end.record(stream)
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) * 1e6
    return rc, wall, start.elapsed_time(end) * 1e3


def graph_time_s(call: Callable[[], int], stream: torch.cuda.Stream, calls: int, replays: int = 3) -> float:
    """Seconds per call: `calls` back-to-back calls in one graph, the best of `replays` timed replays (after one
    untimed replay)."""
    graph, _ = capture([call] * calls, stream)
    with torch.cuda.stream(stream):
        graph.replay()
    return min(timed_replay(graph, stream)[0] for _ in range(replays)) * 1e-6 / calls


def capture_verdict(exc: RuntimeError) -> Rejected:
    """A failed capture in one line. A device-wide synchronize (cudaDeviceSynchronize, cudaMemcpy without a
    stream, cudaMalloc) inside the call cannot be captured: say so, and where such a method can be measured."""
    text = str(exc)
    first = text.splitlines()[0] if text else type(exc).__name__
    if any(s in text for s in ("operation not permitted when stream is capturing", "cudaErrorStreamCaptureUnsupported",
                               "cudaErrorStreamCaptureInvalidated", "cudaErrorStreamCaptureImplicit",
                               "previous error during capture")):
        return Rejected(Verdict.HOST_SYNC_IN_CALL, f"the call synchronizes or allocates outside its stream, which "
                                                   f"a CUDA graph cannot capture ({first}); measure it in offline "
                                                   f"mode (--mode offline), which times each call by the host clock")
    return Rejected(Verdict.GRAPH_CAPTURE, first)
