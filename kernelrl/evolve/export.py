"""Export the best verified candidates as files the rest of kernelrl takes: .cu files for `kernelrl bench
--candidates DIR` (or as seeds of another run), .py files for `kernelrl kb eval --candidates DIR`."""

from __future__ import annotations

import os
from pathlib import Path

from kernelrl.evolve.population import Population


def header(target, c) -> list[str]:
    others = ", ".join(f"{s:.3f}x over {b}" for b, s in c.speedups.items() if b != target.objective)
    lines = [f"kernelrl evolve: {c.name}, best of {target.title}",
             f"geomean speedup {c.score:.3f}x over {target.objective}" + (f" ({others})" if others else ""),
             f"origin: {c.origin}, generation {c.generation}" + (f", model {c.model}" if c.model else "")]
    return [f"{target.comment} {line}" for line in lines]


def export_best(population: Population, target, out_dir: str | Path, top: int = 5) -> list[Path]:
    """Write the `top` fastest verified candidates of `target` to out_dir (atomically); their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank, c in enumerate(population.best(target.key, top)):
        path = out / f"{target.export_stem(c, rank)}{target.extension}"
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("\n".join(header(target, c)) + "\n" + c.source)
        os.replace(tmp, path)
        paths.append(path)
    return paths
