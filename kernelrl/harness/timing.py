"""The device-side timing primitives every GPU measurement uses: capture back-to-back calls in a CUDA graph, and
time one replay with events on the caller's stream inside a synchronized host window (the event time is the
measurement; the wall time is what the hidden-work rule compares it with). The HGEMM worker's device mode, its
content probe and the cuBLASLt autotuning search all time graphs through these two functions.

Host-timed modes (HGEMM offline and server, KernelBench) time single calls with a device-wide synchronize around
each, in the one rounds loop of kernelrl/harness/rounds.py (clocks passed in, captured before candidate code)."""

from __future__ import annotations

import time
from typing import Callable

import torch

from kernelrl.harness.rounds import Clocks
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


# The host-timed rounds' clocks for code that cannot replace them (HGEMM candidates are C libraries): the process's
# own, events recorded on the current stream.
CUDA_CLOCKS = Clocks(now=time.perf_counter, sync=torch.cuda.synchronize,
                     event=lambda: torch.cuda.Event(enable_timing=True), record=lambda event: event.record(),
                     elapsed_ms=lambda start, end: start.elapsed_time(end))


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
