"""Who appears in a prompt: one parent to improve, inspirations to contrast it with, and negative examples.

The parent is drawn by rank (weight 1/(1+rank)), so better kernels are chosen more often without the best one
monopolising the island, plus a small chance of any member at all. Inspirations are built for contrast, the core
of the contrastive method: the island's best others, the best kernel of other islands (an idea from elsewhere), and
a clearly slower one, so the model has a fast and a slow example to explain. Negatives cover as many verdict kinds
as possible (a compile error, a cheat, a wrong result) before repeating a kind, most recent first."""

from __future__ import annotations

import random

from kernelrl.evolve.population import Candidate


def pick_parent(pool: list[Candidate], rng: random.Random, explore: float = 0.1) -> Candidate | None:
    ok = sorted((c for c in pool if c.ok), key=lambda c: c.rank)
    if not ok:
        return None
    if rng.random() < explore:
        return rng.choice(ok)
    return rng.choices(ok, weights=[1.0 / (1 + r) for r in range(len(ok))])[0]


def pick_inspirations(parent: Candidate | None, island: list[Candidate], everyone: list[Candidate], k: int,
                      rng: random.Random) -> list[Candidate]:
    """Up to k verified candidates other than the parent, best first."""
    if k <= 0:
        return []
    taken = {parent.id} if parent else set()
    ranked_island = sorted((c for c in island if c.ok and c.id not in taken), key=lambda c: c.rank)
    ranked_all = sorted((c for c in everyone if c.ok and c.id not in taken), key=lambda c: c.rank)
    chosen: list[Candidate] = []

    def take(c: Candidate | None):
        if c is not None and c.id not in taken and len(chosen) < k:
            chosen.append(c)
            taken.add(c.id)

    island_ids = {c.id for c in island}
    take(next((c for c in ranked_all if c.id not in island_ids), None))  # the best idea from another island
    for c in ranked_island[:max(0, k - 2)]:
        take(c)
    slower = [c for c in ranked_island + ranked_all if c.id not in taken]
    if slower:
        take(slower[-1] if rng.random() < 0.5 else rng.choice(slower))  # a slow one, to contrast with
    for c in ranked_island + ranked_all:
        take(c)
    return sorted(chosen, key=lambda c: c.rank)


def pick_negatives(failures: list[Candidate], n: int) -> list[Candidate]:
    """Up to n failed candidates, one per verdict category first (most recent first); replies without code
    only when nothing else failed."""
    if n <= 0:
        return []
    recent = sorted((c for c in failures if c.status == "done" and not c.ok), key=lambda c: -c.id)
    coded = [c for c in recent if c.category != "malformed"] or recent
    chosen, seen = [], set()
    for c in coded:
        if c.category not in seen:
            chosen.append(c)
            seen.add(c.category)
    chosen += [c for c in coded if c not in chosen]
    return chosen[:n]
