"""The report's drawings: small M×N heatmaps drawn with matplotlib's Agg canvas (never pyplot, so no global state
and no display), returned as compact PNG bytes.

Speedup maps colour log2(speedup) with a diverging colormap centred at 1.0 (blue: the subject is faster, red: the
baseline is faster); family maps are categorical. Cells without a measurement are light grey."""

from __future__ import annotations

import io
import math
from functools import lru_cache

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.colors import ListedColormap, Normalize, to_hex
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D
from PIL import Image  # Pillow is a dependency of matplotlib

SPEEDUP_CMAP = "RdBu"
MISSING = "#e6e6e6"
# Cell values are written when the grid is at most this many cells a side (the paper grid is 10×10).
ANNOTATE_MAX_CELLS = 12
DPI = 100
CELL_FONT_PT = 5.8


def dim_label(d: int) -> str:
    """64, 512, 1k, 12k, 16k: short enough for a tick under a narrow cell."""
    return f"{d // 1024}k" if d >= 1024 and d % 1024 == 0 else str(d)


def speedup_norm_limit(speedups: list[float]) -> float:
    """Symmetric colour range in log2 units: the 98th percentile of |log2 speedup|, between 1.25× and 16×, so noise
    around 1.0 stays pale and one outlier does not wash out the rest."""
    logs = sorted(abs(math.log2(s)) for s in speedups if s and s > 0 and math.isfinite(s))
    if not logs:
        return math.log2(1.25)
    q = logs[min(len(logs) - 1, int(0.98 * len(logs)))]
    return min(max(q, math.log2(1.25)), math.log2(16.0))


def speedup_color(speedup: float, limit: float) -> str:
    """The hex colour a speedup gets on the maps (for the HTML colour bar)."""
    return to_hex(_speedup_cmap()(Normalize(-limit, limit, clip=True)(math.log2(speedup))))


def _cell_format(v: float) -> str:
    if v >= 99.5:
        return f"{v:.0f}"
    if v >= 9.995:
        return f"{v:.1f}"
    return f"{v:.2f}"


class HeatmapPainter:
    """Draws one small map at a time on one reusable figure per grid size. A report draws hundreds of maps of the
    same grid, and laying out tick labels and a hundred text objects is what costs, so the frame (axes, ticks,
    labels) is drawn once and restored for each map, and the cell values are glyph outlines in one collection,
    cached per string: about 25 ms a map instead of 250."""

    def __init__(self, rows: list[int], cols: list[int]):
        self.rows, self.cols = list(rows), list(cols)
        nr, nc = len(self.rows), len(self.cols)
        self.annotate = max(nr, nc) <= ANNOTATE_MAX_CELLS
        # 0.26 in a cell on the paper grid (10×10); bigger for small grids, smaller (and unwritten) for large ones
        cell_in = min(max(2.6 / max(nr, nc), 0.26), 0.45) if self.annotate else max(0.06, 3.0 / max(nr, nc))
        width, height = 0.45 + nc * cell_in + 0.08, 0.42 + nr * cell_in + 0.06
        self.fig = Figure(figsize=(width, height), dpi=DPI)
        self.canvas = FigureCanvasAgg(self.fig)  # also the figure's own canvas
        ax = self.ax = self.fig.add_axes((0.45 / width, 0.42 / height, nc * cell_in / width, nr * cell_in / height))
        ax.set_xticks(range(nc), [dim_label(c) for c in self.cols], fontsize=6.5, rotation=90 if nc > 6 else 0)
        ax.set_yticks(range(nr), [dim_label(r) for r in self.rows], fontsize=6.5)
        ax.set_xlabel("N", fontsize=7, labelpad=2)
        ax.set_ylabel("M", fontsize=7, labelpad=3)
        ax.tick_params(length=2, pad=1)
        for spine in ax.spines.values():
            spine.set_linewidth(0.5)
        self.image = ax.imshow(np.zeros((nr, nc)), interpolation="nearest", aspect="auto")
        self.labels = PathCollection([], offsets=np.zeros((0, 2)), offset_transform=ax.transData, edgecolors="none")
        self.labels.set_transform(Affine2D().scale(DPI / 72.0))  # glyph outlines are in points
        ax.add_collection(self.labels, autolim=False)
        self.image.set_visible(False)
        self.canvas.draw()
        self.frame = self.canvas.copy_from_bbox(self.fig.bbox)
        self.image.set_visible(True)
        self.index_r = {r: i for i, r in enumerate(self.rows)}
        self.index_c = {c: j for j, c in enumerate(self.cols)}

    def _grid(self, values: dict) -> np.ndarray:
        grid = np.full((len(self.rows), len(self.cols)), np.nan)
        for (m, n), v in values.items():
            if m in self.index_r and n in self.index_c and v is not None:
                grid[self.index_r[m], self.index_c[n]] = v
        return grid

    def _png(self, cmap, norm, grid: np.ndarray, texts: list[tuple[int, int, str, str]]) -> bytes:
        self.image.set_cmap(cmap)
        self.image.set_norm(norm)
        self.image.set_data(np.ma.masked_invalid(grid))
        self.labels.set_paths([_glyphs(t) for _, _, t, _ in texts])
        self.labels.set_offsets(np.array([(j, i) for i, j, _, _ in texts], dtype=float).reshape(-1, 2))
        self.labels.set_facecolor([c for _, _, _, c in texts] or ["black"])
        canvas = self.canvas
        canvas.restore_region(self.frame)
        self.ax.draw_artist(self.image)
        self.ax.draw_artist(self.labels)
        for spine in self.ax.spines.values():
            self.ax.draw_artist(spine)
        return _compact_png(np.asarray(canvas.buffer_rgba()))

    def speedup(self, values: dict[tuple[int, int], float], limit: float) -> bytes:
        """values: {(m, n): speedup}; limit: the colour range in log2 units (speedup_norm_limit)."""
        grid = self._grid({key: math.log2(s) for key, s in values.items() if s and s > 0 and math.isfinite(s)})
        cmap = _speedup_cmap()
        norm = Normalize(-limit, limit, clip=True)
        texts = []
        if self.annotate:
            rgba = cmap(norm(np.nan_to_num(grid)))
            light = 0.2126 * rgba[..., 0] + 0.7152 * rgba[..., 1] + 0.0722 * rgba[..., 2]
            for i, j in zip(*np.nonzero(~np.isnan(grid))):
                texts.append((i, j, _cell_format(2.0 ** grid[i, j]), "white" if light[i, j] < 0.5 else "black"))
        return self._png(cmap, norm, grid, texts)

    def categorical(self, values: dict[tuple[int, int], int], colors: list[str]) -> bytes:
        """values: {(m, n): category index}; colors: one colour per category."""
        cmap = ListedColormap(colors or ["#000000"]).with_extremes(bad=MISSING)
        norm = Normalize(-0.5, max(len(colors), 1) - 0.5)
        return self._png(cmap, norm, self._grid(values), [])


@lru_cache(maxsize=1)
def _speedup_cmap():
    return colormaps[SPEEDUP_CMAP].with_extremes(bad=MISSING)  # the registry hands out a copy on every lookup


@lru_cache(maxsize=4096)
def _glyphs(text: str) -> Path:
    """The outline of `text` in points, centred on the origin."""
    path = TextPath((0, 0), text, prop=FontProperties(size=CELL_FONT_PT))
    lo, hi = path.vertices.min(axis=0), path.vertices.max(axis=0)  # control points: close enough, and fast
    return path.transformed(Affine2D().translate(*(-(lo + hi) / 2)))


def family_colors(count: int) -> list[str]:
    """Distinct categorical colours: tab10, then tab20's pale halves, then evenly spaced hues."""
    # the registry types every map as Colormap; tab10 and tab20 are ListedColormaps, which have `colors`
    base = [to_hex(c) for c in colormaps["tab10"].colors]  # type: ignore[attr-defined]
    base += [to_hex(c) for c in colormaps["tab20"].colors[1::2]]  # type: ignore[attr-defined]
    if count > len(base):
        hsv = colormaps["hsv"]
        base += [to_hex(hsv(i / (count - len(base)))) for i in range(count - len(base))]
    return base[:count]


def _compact_png(rgba: np.ndarray) -> bytes:
    """A palette PNG (at most 96 colours, no dithering): a map holds few distinct colours besides anti-aliased
    text, and the page embeds hundreds of maps; a third of the size of the RGB PNG."""
    img = Image.fromarray(np.ascontiguousarray(rgba[..., :3]), "RGB")
    quantized = img.quantize(colors=96, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    # the octree averages white with its neighbours: snap near-white back, or each map shows a faint grey box
    palette = quantized.getpalette()
    assert palette is not None  # a quantized image has one
    for i in range(0, len(palette) - 2, 3):
        if min(palette[i:i + 3]) >= 250:
            palette[i:i + 3] = [255, 255, 255]
    quantized.putpalette(palette)
    buf = io.BytesIO()
    quantized.save(buf, "PNG")
    return buf.getvalue()
