"""The report page: plain HTML with inline CSS and embedded PNG maps; no scripts, no network resources.

Sections (ids in parentheses): environment (`environment`), win rates and geomeans (`summary`), speedup maps
(`maps`, then `maps-MODE-ACC` and one `<figure class="map speedup">` per mode, baseline and K), the family map
(`families`, with a manifest) and the failures (`failures`). Every number of the summary tables carries
`data-s="mode|method|baseline|class|stat"` and `data-v` (the exact value from kernelrl.results.summarize)."""

from __future__ import annotations

import base64
import datetime as dt
import html
import math
from collections import Counter, defaultdict

from kernelrl.version import __version__
from kernelrl.baselines import BASELINES
from kernelrl.report import ReportError
from kernelrl.report.plots import HeatmapPainter, family_colors, speedup_color, speedup_norm_limit
from kernelrl.results import COMBINED, summarize, times_by_shape
from kernelrl.harness.stats import geomean
from kernelrl.workloads.hgemm import SIZE_CLASSES

MODE_ORDER = ("device", "offline", "server")
# Against a candidate: torch and the best-of-layout baselines first (open), then the single layouts (folded).
HEADLINE_BASELINES = ("torch", *COMBINED)
LAYOUT_BASELINES = tuple(b for b in BASELINES if b != "torch")
FAILURES_SHOWN = 200
REASON_CHARS = 300
CLASS_NOTE = {"small": "< 1 GFLOP", "medium": "1–100 GFLOP", "large": "> 100 GFLOP"}

esc = html.escape


def render_page(rows: list[dict], sources: list[dict], envs: dict[str, dict] | None = None,
                families: dict | None = None, method: str | None = None,
                manifest_path: str | None = None) -> tuple[str, dict]:
    """The page and {maps, subject}."""
    subject, pairs = choose_pairs(rows, method)
    table = times_by_shape(rows)
    summary = summarize(rows, baselines_vs_torch=True)
    accs = sorted({acc for _, (_, _, _, acc) in table} | {r["acc"] for r in rows})
    body = [_header(rows, sources, subject, manifest_path),
            _environment(rows, sources, envs or {}),
            _summary(summary)]
    maps_html, maps = _speedup_maps(table, pairs, subject, show_acc=len(accs) > 1)
    body.append(maps_html)
    if families is not None:
        fam_html, fam_maps = _family_maps(families, rows, table, subject)
        body.append(fam_html)
        maps += fam_maps
    body.append(_failures(rows))
    toc = _toc(table, show_acc=len(accs) > 1, families=families is not None)
    page = (f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>kernelrl report{esc(' — ' + subject) if subject else ''}</title>\n<style>{CSS}</style>\n"
            f"</head>\n<body>\n{body[0]}\n{toc}\n" + "\n".join(body[1:]) + "\n</body>\n</html>\n")
    return page, {"maps": maps, "subject": subject}


def choose_pairs(rows: list[dict], method: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """(subject, [(method, baseline)]) for the maps.

    A candidate against every baseline (torch, best-of-layout, then single layouts); with only baselines in the
    results (or `method` naming one), library baselines against torch."""
    methods = {r["method"] for r in rows}
    candidates = sorted(m for m in methods if m not in BASELINES and m not in COMBINED)
    library = [b for b in (*COMBINED, *LAYOUT_BASELINES)
               if b in methods or (b in COMBINED and all(p in methods for p in COMBINED[b]))]
    if method is not None:
        if method in candidates:
            return method, [(method, b) for b in (*HEADLINE_BASELINES, *LAYOUT_BASELINES)]
        if method in library:
            return None, [(method, "torch")]
        known = ", ".join(candidates + library) or "none"
        raise ReportError(f"--method {method}: not in the results (methods there: {known})")
    if len(candidates) == 1:
        return candidates[0], [(candidates[0], b) for b in (*HEADLINE_BASELINES, *LAYOUT_BASELINES)]
    if candidates:
        raise ReportError(f"the results hold several candidates ({', '.join(candidates)}): "
                          "choose the one to map with --method NAME")
    return None, [(b, "torch") for b in library]


# ---------------------------------------------------------------------------------------------------- sections

def _header(rows, sources, subject, manifest_path) -> str:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    files = ", ".join(f"<code>{esc(s['path'])}</code>" for s in sources)
    what = (f"speedups of <b>{esc(subject)}</b> over the baselines" if subject
            else "speedups of the library baselines over torch.matmul")
    manifest = f"; manifest <code>{esc(manifest_path)}</code>" if manifest_path else ""
    return (f"<header><h1>kernelrl report</h1>\n<p class=\"meta\">{what}; {len(rows)} measurements from "
            f"{files}{manifest}. Generated {now} by kernelrl {esc(__version__)}.</p>\n"
            "<p class=\"meta\">Speedup = baseline time / method time (median per shape, verified measurements "
            "only); above 1 the method is faster. Size classes: "
            + ", ".join(f"{c} {CLASS_NOTE[c]}" for c in SIZE_CLASSES) + " (2·M·N·K).</p></header>")


def _toc(table, show_acc: bool, families: bool) -> str:
    groups = _groups(table)
    maps = "".join(f"<li><a href=\"#{_group_id(mode, acc)}\">{esc(_group_title(mode, acc, show_acc))}</a></li>"
                   for mode, acc in groups)
    return ("<nav><ol><li><a href=\"#environment\">Environment</a></li>"
            "<li><a href=\"#summary\">Win rates and geomean speedups</a></li>"
            f"<li><a href=\"#maps\">Speedup maps</a><ol>{maps}</ol></li>"
            + ("<li><a href=\"#families\">Which family won where</a></li>" if families else "")
            + "<li><a href=\"#failures\">Failures</a></li></ol></nav>")


def _environment(rows, sources, envs) -> str:
    out = ["<section id=\"environment\"><h2>Environment</h2>"]
    gpus = Counter(r.get("gpu") or "unknown" for r in rows)
    out.append("<table><tr><th>GPU</th><th class=\"num\">measurements</th></tr>"
               + "".join(f"<tr><td>{esc(str(g))}</td><td class=\"num\">{c}</td></tr>" for g, c in gpus.most_common())
               + "</table>")
    for gpu, env in sorted(envs.items()):
        if env:
            cells = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in sorted(env.items()))
            out.append(f"<h3>Recorded environment, {esc(str(gpu))}</h3><table class=\"kv\">{cells}</table>")
    out.append("<h3>Sources</h3><table><tr><th>file</th><th>kind</th><th class=\"num\">rows</th></tr>"
               + "".join(f"<tr><td><code>{esc(s['path'])}</code></td><td>{s['kind']}</td>"
                         f"<td class=\"num\">{s['rows']}</td></tr>" for s in sources) + "</table>")
    by_mode: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_mode[r["mode"]].append(r)
    out.append("<h3>Runs per mode</h3><table><tr><th>mode</th><th class=\"num\">shapes</th><th>accumulator</th>"
               "<th>cache</th><th>qps</th><th>samples</th><th>methods</th></tr>")
    for mode in _ordered_modes(by_mode):
        rs = by_mode[mode]
        shapes = {(r["m"], r["n"], r["k"], r["acc"]) for r in rs}
        samples = sorted(int(float(r["samples"])) for r in rs if str(r.get("samples") or "").strip())
        out.append(f"<tr><td>{esc(mode)}</td><td class=\"num\">{len(shapes)}</td>"
                   f"<td>{esc(_join(r['acc'] for r in rs))}</td><td>{esc(_join(r.get('cache') for r in rs))}</td>"
                   f"<td>{esc(_join(r.get('qps') for r in rs))}</td>"
                   f"<td>{_range(samples)}</td><td>{esc(_join(r['method'] for r in rs))}</td></tr>")
    out.append("</table>")
    mixed = [m for m in by_mode
             if len({(r.get("gpu"), str(r.get("cache")), str(r.get("qps"))) for r in by_mode[m]}) > 1]
    if mixed:
        out.append(f"<p class=\"warn\">Mode {esc(', '.join(mixed))} mixes GPUs or cache/qps settings; where they "
                   "measured the same shape and method, the later file's row is the one used.</p>")
    out.append("</section>")
    return "\n".join(out)


def _summary(summary: list[dict]) -> str:
    candidate_rows = [s for s in summary if s["method"] not in BASELINES and s["method"] not in COMBINED]
    library_rows = [s for s in summary if s["method"] in BASELINES or s["method"] in COMBINED]
    out = ["<section id=\"summary\"><h2>Win rates and geomean speedups</h2>",
           "<p class=\"meta\">Per mode and baseline over the shapes both methods measured and verified: geomean "
           "and mean speedup, win rate (speedup &gt; 1), the extremes, and per size class the geomean with the win "
           "rate and shape count beneath. Blue: the method is faster; red: slower.</p>"]
    if candidate_rows:
        out.append("<h3>Candidates against the baselines</h3>" + _summary_table(candidate_rows, summary))
    if library_rows:
        out.append("<h3>Library baselines against torch.matmul</h3>" + _summary_table(library_rows, summary))
    if not summary:
        out.append("<p class=\"warn\">No shape has a verified time for two methods: nothing to compare.</p>")
    out.append("</section>")
    return "\n".join(out)


def _summary_table(shown: list[dict], summary: list[dict]) -> str:
    by_key = {(s["mode"], s["method"], s["baseline"], s["class"]): s for s in summary}
    head = ("<table class=\"summary\"><tr><th>mode</th><th>method</th><th>vs</th><th class=\"num\">shapes</th>"
            "<th class=\"num\">geomean</th><th class=\"num\">mean</th><th class=\"num\">win rate</th>"
            "<th class=\"num\">min</th><th class=\"num\">max</th>"
            + "".join(f"<th class=\"num\">{c}<br><small>{CLASS_NOTE[c]}</small></th>" for c in SIZE_CLASSES)
            + "</tr>")
    lines = [head]
    order = {b: i for i, b in enumerate((*HEADLINE_BASELINES, *LAYOUT_BASELINES))}
    ordered = sorted((s for s in shown if s["class"] == "all"),
                     key=lambda s: (_mode_rank(s["mode"]), s["method"] in BASELINES, s["method"],
                                    order.get(s["baseline"], len(order))))
    previous_mode = None
    for s in ordered:
        key = f"{s['mode']}|{s['method']}|{s['baseline']}"
        cls_cells = []
        for c in SIZE_CLASSES:
            cs = by_key.get((s["mode"], s["method"], s["baseline"], c))
            if cs is None:
                cls_cells.append("<td class=\"num dim\">—</td>")
                continue
            cls_cells.append(f"<td class=\"num\">{_num(f'{key}|{c}|geomean', cs['geomean'], '.3f', True)}<br><small>"
                             f"{_num(f'{key}|{c}|win_rate', cs['win_rate'], '%')} of "
                             f"{_num(f'{key}|{c}|shapes', cs['shapes'], 'd')}</small></td>")
        tr = "<tr class=\"first\">" if s["mode"] != previous_mode else "<tr>"
        previous_mode = s["mode"]
        lines.append(f"{tr}<td>{esc(s['mode'])}</td><td>{esc(s['method'])}</td>"
                     f"<td>{esc(s['baseline'])}</td>"
                     f"<td class=\"num\">{_num(key + '|all|shapes', s['shapes'], 'd')}</td>"
                     f"<td class=\"num\"><b>{_num(key + '|all|geomean', s['geomean'], '.3f', True)}</b></td>"
                     f"<td class=\"num\">{_num(key + '|all|mean', s['mean'], '.3f', True)}</td>"
                     f"<td class=\"num\">{_num(key + '|all|win_rate', s['win_rate'], '%')}</td>"
                     f"<td class=\"num\">{_num(key + '|all|min', s['min'], '.2f', True)}</td>"
                     f"<td class=\"num\">{_num(key + '|all|max', s['max'], '.2f', True)}</td>"
                     + "".join(cls_cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _speedup_maps(table, pairs, subject, show_acc: bool) -> tuple[str, int]:

    out = ["<section id=\"maps\"><h2>Speedup maps</h2>",
           "<p class=\"meta\">One M×N map per K; each cell is baseline time / method time for that shape "
           "(the value is written in the cell when it fits). Colours are on a log scale centred at 1.0, one "
           "scale per mode. Grey: not measured, or not verified for one of the two.</p>"]
    count = 0
    for (mode, acc), shapes in _groups(table).items():
        group_pairs = [(s, b) for s, b in pairs if any(s in t and b in t for t in shapes.values())]
        title = _group_title(mode, acc, show_acc)
        out.append(f"<section id=\"{_group_id(mode, acc)}\"><h3>{esc(title)}</h3>")
        if not group_pairs:
            out.append("<p class=\"warn\">Nothing to map: no shape has both methods of a pair verified.</p>"
                       "</section>")
            continue
        ms = sorted({m for m, _, _ in shapes})
        ns = sorted({n for _, n, _ in shapes})
        ks = sorted({k for _, _, k in shapes})
        speedups = {(s, b): {shape: t[b] / t[s] for shape, t in shapes.items() if s in t and b in t}
                    for s, b in group_pairs}
        limit = speedup_norm_limit([v for d in speedups.values() for v in d.values()])
        out.append(_colour_bar(limit, speedup_color, subject))
        painter = HeatmapPainter(ms, ns)
        for s, b in group_pairs:
            values = speedups[(s, b)]
            overall = geomean(list(values.values()))
            folded = subject is not None and b in LAYOUT_BASELINES
            out.append(f"<details{'' if folded else ' open'}><summary><h4>{esc(s)} vs {esc(b)}</h4> "
                       f"<span class=\"meta\">geomean {_x(overall)} over {len(values)} shapes; "
                       f"faster on {sum(v > 1 for v in values.values())}</span></summary><div class=\"maps\">")
            for k in ks:
                cells = {(m, n): v for (m, n, kk), v in values.items() if kk == k}
                if not cells:
                    continue
                png = painter.speedup(cells, limit)
                count += 1
                caption = (f"K = {k} · geomean {_x(geomean(list(cells.values())))} · "
                           f"faster on {sum(v > 1 for v in cells.values())}/{len(cells)}")
                alt = f"{mode} {s} vs {b}, K = {k}: speedup per M and N"
                out.append(f"<figure class=\"map speedup\" data-mode=\"{esc(mode)}\" data-acc=\"{esc(acc)}\" "
                           f"data-method=\"{esc(s)}\" data-baseline=\"{esc(b)}\" data-k=\"{k}\">"
                           f"<img src=\"data:image/png;base64,{base64.b64encode(png).decode()}\" alt=\"{esc(alt)}\">"
                           f"<figcaption>{esc(caption)}</figcaption></figure>")
            out.append("</div></details>")
        out.append("</section>")
    out.append("</section>")
    return "\n".join(out), count


def _family_maps(families: dict, rows: list[dict], table, subject) -> tuple[str, int]:

    counts = Counter(e["family"] for e in families.values())
    names = sorted(counts, key=lambda f: (-counts[f], f))
    colors = dict(zip(names, family_colors(len(names))))
    index = {f: i for i, f in enumerate(names)}
    out = ["<section id=\"families\"><h2>Which family won where</h2>",
           "<p class=\"meta\">The kernel family the manifest gives for each shape, one M×N map per K. "
           "Grey: no entry in the manifest.</p>",
           "<p class=\"legend\">" + " ".join(f"<span class=\"swatch\" style=\"background:{colors[f]}\"></span>"
                                            f"{esc(f)} ({counts[f]})" for f in names) + "</p>"]
    out.append(_family_table(families, names, colors, rows, subject))
    count = 0
    measured = {shape for _, shape in table}
    for acc in sorted({key[3] for key in families}):
        keys = [key for key in families if key[3] == acc]
        dims = keys + [s for s in measured if s[3] == acc]
        painter = HeatmapPainter(sorted({d[0] for d in dims}), sorted({d[1] for d in dims}))
        out.append(f"<h3>{esc(acc)} accumulator</h3><div class=\"maps\">")
        for k in sorted({key[2] for key in keys}):
            cells = {(m, n): index[families[(m, n, kk, a)]["family"]] for (m, n, kk, a) in keys if kk == k}
            png = painter.categorical(cells, [colors[f] for f in names])
            count += 1
            top = Counter(names[i] for i in cells.values()).most_common(1)[0]
            out.append(f"<figure class=\"map family\" data-acc=\"{esc(acc)}\" data-k=\"{k}\">"
                       f"<img src=\"data:image/png;base64,{base64.b64encode(png).decode()}\" "
                       f"alt=\"kernel family per M and N, K = {k}\"><figcaption>K = {k} · {len(cells)} shapes · "
                       f"mostly {esc(top[0])}</figcaption></figure>")
        out.append("</div>")
    out.append("</section>")
    return "\n".join(out), count


def _family_table(families, names, colors, rows, subject) -> str:
    """Per family: shapes, kernels, and (for the subject) geomean and win rate from summarize over its shapes."""
    shapes_of: dict[str, set] = defaultdict(set)
    kernels_of: dict[str, Counter] = defaultdict(Counter)
    for key, entry in families.items():
        shapes_of[entry["family"]].add(key)
        if entry["kernel"]:
            kernels_of[entry["family"]][entry["kernel"]] += 1
    columns: list[tuple[str, str]] = []
    per_family: dict[str, dict] = {}
    if subject:
        for f in names:
            subset = [r for r in rows if (r["m"], r["n"], r["k"], r["acc"]) in shapes_of[f]]
            per_family[f] = {(s["mode"], s["baseline"]): s for s in summarize(subset)
                             if s["method"] == subject and s["class"] == "all"}
        present = {key for d in per_family.values() for key in d}
        columns = [(mode, b) for mode in _ordered_modes({m for m, _ in present})
                   for b in ("torch", "cublas_best", "cublaslt_auto_best") if (mode, b) in present]
    head = ("<table class=\"summary\"><tr><th>family</th><th class=\"num\">shapes</th><th>kernels</th>"
            + "".join(f"<th class=\"num\">{esc(mode)}<br><small>vs {esc(b)}</small></th>" for mode, b in columns)
            + "</tr>")
    lines = [head]
    for f in names:
        kernels = kernels_of[f]
        shown = ", ".join(esc(k) for k, _ in kernels.most_common(3)) + (" …" if len(kernels) > 3 else "")
        cells = []
        for mode, b in columns:
            s = per_family[f].get((mode, b))
            if s is None:
                cells.append("<td class=\"num dim\">—</td>")
                continue
            key = f"{mode}|{subject}|{b}|family:{f}|geomean"
            cells.append(f"<td class=\"num\">{_num(key, s['geomean'], '.3f', True)}"
                         f"<br><small>{s['win_rate']:.0%} of {s['shapes']}</small></td>")
        lines.append(f"<tr><td><span class=\"swatch\" style=\"background:{colors[f]}\"></span>{esc(f)}</td>"
                     f"<td class=\"num\">{len(shapes_of[f])}</td><td>{len(kernels)}"
                     f"{': ' + shown if kernels else ''}</td>" + "".join(cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _failures(rows: list[dict]) -> str:
    bad = sorted((r for r in rows if not r["verified"]),
                 key=lambda r: (_mode_rank(r["mode"]), r["method"], str(r.get("reason") or ""), r["m"], r["n"],
                                r["k"], r["acc"]))
    out = ["<section id=\"failures\"><h2>Failures</h2>"]
    if not bad:
        out.append("<p>None: every measurement was verified.</p></section>")
        return "\n".join(out)
    counts = Counter((r["mode"], r["method"], _reason(r)) for r in bad)
    out.append(f"<p class=\"meta\">{len(bad)} measurements not verified (left out of every speedup above).</p>")
    out.append("<table><tr><th>mode</th><th>method</th><th>reason</th><th class=\"num\">count</th></tr>"
               + "".join(f"<tr><td>{esc(mode)}</td><td>{esc(method)}</td><td>{esc(reason)}</td>"
                         f"<td class=\"num\">{c}</td></tr>"
                         for (mode, method, reason), c in sorted(counts.items(),
                                                                 key=lambda kv: (_mode_rank(kv[0][0]), -kv[1])))
               + "</table>")
    shown = bad[:FAILURES_SHOWN]
    out.append("<h3>Each failure</h3><table class=\"failures\"><tr><th>shape</th><th>acc</th><th>mode</th>"
               "<th>method</th><th class=\"num\">max rel. err</th><th>reason</th></tr>")
    for r in shown:
        err = r.get("max_rel_err")
        out.append(f"<tr class=\"failure\"><td>{r['m']}×{r['n']}×{r['k']}</td><td>{esc(r['acc'])}</td>"
                   f"<td>{esc(r['mode'])}</td><td>{esc(r['method'])}</td>"
                   f"<td class=\"num\">{'' if err is None else f'{err:.2e}'}</td><td>{esc(_reason(r))}</td></tr>")
    out.append("</table>")
    if len(bad) > len(shown):
        out.append(f"<p class=\"warn\">… and {len(bad) - len(shown)} more not listed "
                   f"({len(shown)} of {len(bad)} shown).</p>")
    out.append("</section>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------- helpers

def _groups(table) -> dict[tuple[str, str], dict[tuple[int, int, int], dict]]:
    """{(mode, acc): {(m, n, k): {method: time}}}, modes in the usual order."""
    groups: dict = defaultdict(dict)
    for (mode, (m, n, k, acc)), times in table.items():
        groups[(mode, acc)][(m, n, k)] = times
    return {key: groups[key] for key in sorted(groups, key=lambda g: (_mode_rank(g[0]), g[1]))}


def _group_id(mode: str, acc: str) -> str:
    return "maps-" + "".join(c if c.isalnum() else "-" for c in f"{mode}-{acc}")


def _group_title(mode: str, acc: str, show_acc: bool) -> str:
    return f"{mode} mode" + (f", {acc} accumulator" if show_acc else "")


def _mode_rank(mode: str) -> tuple:
    return (MODE_ORDER.index(mode), "") if mode in MODE_ORDER else (len(MODE_ORDER), mode)


def _ordered_modes(modes) -> list[str]:
    return sorted(modes, key=_mode_rank)


def _colour_bar(limit: float, speedup_color, subject) -> str:
    lo, hi = 2.0 ** -limit, 2.0 ** limit
    stops = ", ".join(speedup_color(2.0 ** (limit * (2 * i / 20 - 1)), limit) for i in range(21))
    who = esc(subject) if subject else "the method"
    return (f"<div class=\"cbar\"><span>{lo:.2f}× and below: baseline faster</span>"
            f"<span class=\"bar\" style=\"background:linear-gradient(to right, {stops})\"></span>"
            f"<span>{hi:.2f}× and above: {who} faster</span></div>")


def _num(key: str, value, fmt: str, speedup: bool = False) -> str:
    """A number with its exact value as data (the tests compare it with summarize's)."""
    if fmt == "%":
        text = f"{100 * value:.0f} %"
    else:
        text = format(value, fmt)
    cls = ""
    if speedup and isinstance(value, float) and math.isfinite(value) and abs(value - 1.0) > 1e-12:
        cls = " class=\"up\"" if value > 1 else " class=\"down\""
    return f"<span{cls} data-s=\"{esc(key)}\" data-v=\"{value!r}\">{text}</span>"


def _x(v: float) -> str:
    return "—" if not math.isfinite(v) else f"{v:.3f}×"


def _reason(r: dict) -> str:
    reason = str(r.get("reason") or "no reason recorded")
    return reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 1] + "…"


def _join(values) -> str:
    return ", ".join(sorted({str(v) for v in values if v not in (None, "")})) or "—"


def _range(values: list[int]) -> str:
    if not values:
        return "—"
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


CSS = """
:root { --fg: #1d2330; --dim: #6b7280; --line: #d9dde3; --up: #1f5fa8; --down: #b2282e; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Helvetica, Arial, sans-serif;
       color: var(--fg); margin: 24px auto; max-width: 1560px; padding: 0 20px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 34px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; } h4 { display: inline; font-size: 14px; margin: 0; }
.meta { color: var(--dim); margin: 4px 0; } .warn { color: #8a5300; }
nav ol { margin: 8px 0; padding-left: 22px; } nav li { margin: 1px 0; } a { color: var(--up); }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f4f6f8; font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { background: none; font-weight: 500; color: var(--dim); }
small { color: var(--dim); font-size: 11px; } .dim { color: var(--dim); }
.up { color: var(--up); } .down { color: var(--down); }
details { margin: 10px 0 4px; } summary { cursor: pointer; padding: 4px 0; }
.maps { display: flex; flex-wrap: wrap; gap: 6px 10px; }
tr.first td { border-top: 2px solid #aab2bd; }
figure { margin: 0; width: min-content; } figure img { display: block; }
figcaption { font-size: 12px; color: var(--dim); text-align: center; margin-top: -2px; }
.cbar { display: flex; align-items: center; gap: 10px; font-size: 12px; color: var(--dim); margin: 6px 0; }
.cbar .bar { display: inline-block; width: 260px; height: 12px; border: 1px solid var(--line); }
.swatch { display: inline-block; width: 12px; height: 12px; margin: 0 5px -1px 0; border: 1px solid #0002; }
.legend { line-height: 2; } .legend .swatch { margin-left: 10px; }
code { font-size: 12px; background: #f4f6f8; padding: 0 3px; border-radius: 3px; }
"""
