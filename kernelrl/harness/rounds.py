"""Shuffled rounds of host-timed calls: the one loop every host-timed measurement runs (HGEMM's offline and server
modes, KernelBench's pairs). Graph-replay timing is the other loop, in timing.py.

Each round visits every method once, in an order the run's secret shuffles; a method's turn is `calls_per_round`
calls, each timed by the host clock between two device-wide synchronizes, then (on a GPU) one more call with stream
events inside the host window: its wall time less its event time is the call's work off the caller's stream (the
hidden-work rule), and it is not a timing sample. What differs between workloads (inputs made fresh or perturbed
before each call, which calls are judged, a baseline's staging, the watch around a candidate's code) is the
adapter's; the loop only orders, times and hands back.

The clocks are passed in, captured before any candidate code runs (a candidate may replace the module-level ones).

`Settle` ends the rounds early where more would only cost time: large tasks whose rounds already agree. Stopping
early weakens no check: every round judges its last call, so a candidate that turns stale inside the measured calls
is caught in the round it does; one that would only turn stale later was honest in every call that was timed."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class Clocks:
    """The timing functions the loop calls, captured before any candidate code: `now` in seconds, `sync` a
    device-wide synchronize, `event()` a timing event (None: no GPU, so no event-timed call), `record(event)` on the
    caller's current stream, `elapsed_ms(start, end)`."""

    now: Callable[[], float]
    sync: Callable[[], None]
    event: Callable[[], Any] | None = None
    record: Callable[[Any], None] | None = None
    elapsed_ms: Callable[[Any, Any], float] | None = None


@dataclass(frozen=True)
class Settle:
    """Stop after round r (r >= `min_rounds`) when that round took at least `min_round_s` (only a large task's
    rounds are worth cutting: a small one's cost little, and their noise is larger) and every method's per-round
    medians so far agree within `spread` (max / min - 1)."""

    min_rounds: int = 2
    spread: float = 0.02
    min_round_s: float = 1.0

    def settled(self, medians: dict[str, list[float]], round_s: float) -> bool:
        timed = [m for m in medians.values() if m]  # a method that was skipped (a failed baseline) has none
        if not timed or min(map(len, timed)) < self.min_rounds or round_s < self.min_round_s:
            return False
        return all(min(m) > 0 and max(m) / min(m) - 1 <= self.spread for m in timed)


class RoundsAdapter(Protocol):
    def turn(self, name: str, rnd: int) -> bool:
        """Start `name`'s turn in round `rnd` (announce it, restore inputs, check what ran before); False skips it."""

    def prepare(self, name: str, rnd: int, rep: int) -> Any:
        """Untimed, before each call: its inputs (fresh or perturbed), the L2 flush, a baseline's staging."""

    def call(self, name: str, prepared: Any) -> Any:
        """The call itself: the only thing timed (with the synchronize after it)."""

    def after(self, name: str, rnd: int, rep: int, prepared: Any, out: Any, error: BaseException | None) -> bool:
        """Untimed, after each call (the event-timed one too, rep == calls_per_round): judge a sampled call, handle
        an exception the call or its synchronize raised; False ends the turn."""

    def end_turn(self, name: str, rnd: int) -> None:
        """After the turn (checks that nothing ran beside it)."""


def calls_per_turn(calls_per_round: int, clocks: Clocks) -> int:
    """How many calls a method's turn makes: the timed ones, and the event-timed one where there are events (an
    adapter that picks which calls to judge counts them with this)."""
    return calls_per_round + (1 if clocks.event is not None else 0)


def host_timed_rounds(names: list[str], rounds: int, calls_per_round: int, rng: random.Random,
                      adapter: RoundsAdapter, clocks: Clocks, settle: Settle | None = None
                      ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(host µs of every timed call, off-stream µs of every event-timed call), by method name; at most `rounds`
    rounds, fewer where `settle` says so (len(host[name]) / calls_per_round tells how many ran)."""
    host: dict[str, list[float]] = {n: [] for n in names}
    off_stream: dict[str, list[float]] = {n: [] for n in names}
    medians: dict[str, list[float]] = {n: [] for n in names}
    calls = calls_per_turn(calls_per_round, clocks)
    # read once, here: a candidate that reached the clocks object could swap `now` inside a timed call and put it
    # back before the watch compares (a helper's review, 2026-12-07: accepted at 11x; tests/harness/test_rounds.py)
    now, sync = clocks.now, clocks.sync
    if calls > calls_per_round:  # an event-timed call each turn: clocks with events have `record` and `elapsed_ms`
        assert clocks.event is not None and clocks.record is not None and clocks.elapsed_ms is not None
        event, record, elapsed_ms = clocks.event, clocks.record, clocks.elapsed_ms
    for rnd in range(rounds):
        started, before = now(), {n: len(host[n]) for n in names}
        order = list(names)
        rng.shuffle(order)
        for name in order:
            if not adapter.turn(name, rnd):
                continue
            for rep in range(calls):
                windowed = rep == calls_per_round  # the event-timed call (only when there are events)
                prepared = adapter.prepare(name, rnd, rep)
                out = error = None
                sync()
                t0 = now()
                try:
                    if windowed:
                        start, end = event(), event()
                        record(start)
                    out = adapter.call(name, prepared)
                    if windowed:
                        record(end)
                    sync()
                except Exception as exc:  # the adapter decides what a failed call means
                    error = exc
                if error is None:
                    wall = (now() - t0) * 1e6
                    if windowed:
                        off_stream[name].append(wall - elapsed_ms(start, end) * 1e3)
                    else:
                        host[name].append(wall)
                go_on = adapter.after(name, rnd, rep, prepared, out, error)
                out = prepared = None  # freed before the next call's inputs are made (large tasks' peak memory)
                if not go_on:
                    break
            adapter.end_turn(name, rnd)
        for n in names:
            if len(host[n]) > before[n]:
                medians[n].append(statistics.median(host[n][before[n]:]))
        if settle is not None and settle.settled(medians, now() - started):
            break
    return host, off_stream
