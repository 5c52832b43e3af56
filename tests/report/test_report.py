"""`kernelrl report`: the page from made-up CSVs (sections, one map per mode, baseline and K, summarize's numbers,
failures, the family map), one-line errors through the CLI, and one render in headless Chromium where it is
installed."""

from __future__ import annotations

import base64
import html
import json
import os
import random
import re
import shutil
import signal
import subprocess
from collections import Counter

import pytest

from kernelrl.cli import main
from kernelrl.results import read_csv, summarize, write_csv

GPU = "Test GPU 80GB HBM3"
DIMS = (64, 256, 1024)
KS = (64, 4096)
MODES = ("device", "offline")
METHODS = ("torch", "cublas_nn", "cublas_tn", "cand")
FAILED = {("device", 64, 64, 64): "wrong values: max rel err 0.51 > 3.9e-03",
          ("offline", 1024, 1024, 4096): "during timing: unwritten output"}
MAP_BASELINES = ("torch", "cublas_best", "cublas_nn", "cublas_tn")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRL_CACHE", str(tmp_path / "cache"))


def make_rows(methods=METHODS, failed=FAILED, dims=DIMS, ks=KS, modes=MODES) -> list[dict]:
    rows = []
    for mode in modes:
        for m in dims:
            for n in dims:
                for k in ks:
                    base = 2.0 + m * n * k / 2e6
                    rng = random.Random(f"{mode}{m}x{n}x{k}")
                    for method in methods:
                        factor = {"torch": 1.0, "cublas_nn": 0.95, "cublas_tn": 0.9}.get(method) or \
                            rng.uniform(0.6, 1.5)
                        t = base * factor
                        bad = failed.get((mode, m, n, k)) if method not in ("torch", "cublas_nn", "cublas_tn") \
                            else None
                        rows.append({"m": m, "n": n, "k": k, "acc": "fp32", "mode": mode, "method": method,
                                     "time_us_median": None if bad else t, "time_us_p10": None if bad else t * 0.98,
                                     "time_us_p90": None if bad else t * 1.03,
                                     "tflops": None if bad else 2 * m * n * k / t / 1e6,
                                     "max_rel_err": 0.51 if bad else 2e-4, "verified": not bad, "reason": bad or "",
                                     "cache": "hot" if mode == "device" else "-", "qps": 0, "samples": 7,
                                     "gpu": GPU})
    return rows


@pytest.fixture()
def results_csv(tmp_path):
    path = tmp_path / "results.csv"
    write_csv(make_rows(), path)
    return path


def build(paths, out, **kw):
    pytest.importorskip("matplotlib")
    from kernelrl.report import build_report
    info = build_report([str(p) for p in paths], out, **kw)
    return out.read_text(encoding="utf-8"), info


def figures(page: str, kind: str = "speedup") -> list[dict]:
    out = []
    for attrs in re.findall(rf'<figure class="map {kind}"([^>]*)>', page):
        out.append({k: html.unescape(v) for k, v in re.findall(r'data-([a-z]+)="([^"]*)"', attrs)})
    return out


def numbers(page: str) -> dict[str, float]:
    found = re.findall(r'data-s="([^"]+)" data-v="([^"]+)"', page)
    keys = [html.unescape(k) for k, _ in found]
    assert len(keys) == len(set(keys)), [k for k, c in Counter(keys).items() if c > 1]
    return {html.unescape(k): float(v) for k, v in found}


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_page_has_its_sections_and_one_map_per_mode_baseline_and_k(tmp_path, results_csv):
    page, info = build([results_csv], tmp_path / "out" / "report.html")
    for title in ("<h1>kernelrl report</h1>", ">Environment</h2>", ">Win rates and geomean speedups</h2>",
                  ">Speedup maps</h2>", ">Failures</h2>", "device mode</h3>", "offline mode</h3>"):
        assert title in page, title
    assert GPU in page
    assert "Which family won where" not in page  # no manifest
    maps = figures(page)
    keys = Counter((f["mode"], f["baseline"], int(f["k"])) for f in maps)
    assert keys == Counter({(mode, b, k): 1 for mode in MODES for b in MAP_BASELINES for k in KS})
    assert {f["method"] for f in maps} == {"cand"} and info["subject"] == "cand" and info["maps"] == len(maps)
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(maps)
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    # self-contained: nothing to fetch, nothing to run
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<script" not in page and "<link" not in page
    assert info["bytes"] == len(page.encode()) < 2_000_000


def test_summary_numbers_are_summarize_numbers(tmp_path, results_csv):
    page, _ = build([results_csv], tmp_path / "report.html")
    shown = numbers(page)
    expected = {}
    for s in summarize(read_csv(results_csv), baselines_vs_torch=True):
        key = f"{s['mode']}|{s['method']}|{s['baseline']}|{s['class']}"
        stats = ("shapes", "geomean", "mean", "win_rate", "min", "max") if s["class"] == "all" else \
            ("shapes", "geomean", "win_rate")
        for stat in stats:
            expected[f"{key}|{stat}"] = float(s[stat])
    assert shown == expected
    # a spot check of the text as well as the data: cand vs torch, device, all shapes
    geo = expected["device|cand|torch|all|geomean"]
    assert f'data-s="device|cand|torch|all|geomean" data-v="{geo!r}">{geo:.3f}<' in page
    assert "Candidates against the baselines" in page and "Library baselines against torch.matmul" in page


def test_failures_are_listed_with_reasons_and_capped(tmp_path, monkeypatch):
    failed = {**FAILED, **{("device", m, n, 64): f"wrong values: case {m}x{n}" for m in DIMS for n in DIMS}}
    path = tmp_path / "r.csv"
    write_csv(make_rows(failed=failed), path)
    page, _ = build([path], tmp_path / "report.html")
    section = page[page.index('id="failures"'):]
    assert section.count('<tr class="failure">') == len(failed)
    assert "during timing: unwritten output" in section and "wrong values: case 256x1024" in section
    assert f"{len(failed)} measurements not verified" in section

    from kernelrl.report import html as report_html
    monkeypatch.setattr(report_html, "FAILURES_SHOWN", 3)
    page, _ = build([path], tmp_path / "capped.html")
    section = page[page.index('id="failures"'):]
    total = len(failed)
    assert section.count('<tr class="failure">') == 3
    assert f"… and {total - 3} more not listed (3 of {total} shown)" in section


def test_no_failures_says_so(tmp_path):
    path = tmp_path / "r.csv"
    write_csv(make_rows(failed={}), path)
    page, _ = build([path], tmp_path / "report.html")
    assert "None: every measurement was verified." in page


def test_baselines_only_maps_libraries_against_torch(tmp_path):
    path = tmp_path / "r.csv"
    write_csv(make_rows(methods=("torch", "cublas_nn", "cublas_tn")), path)
    page, info = build([path], tmp_path / "report.html")
    maps = figures(page)
    assert info["subject"] is None
    assert {(f["method"], f["baseline"]) for f in maps} == {("cublas_best", "torch"), ("cublas_nn", "torch"),
                                                            ("cublas_tn", "torch")}
    assert len(maps) == 3 * len(MODES) * len(KS)
    assert "Candidates against the baselines" not in page and "Library baselines against torch.matmul" in page


def test_several_candidates_need_method(tmp_path, capsys):
    path = tmp_path / "r.csv"
    write_csv(make_rows(methods=(*METHODS, "other")), path)
    out = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(out)]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("kernelrl:") and "--method" in lines[0] and "other" in lines[0]
    assert not out.exists()
    page, info = build([path], out, method="other")
    assert {f["method"] for f in figures(page)} == {"other"} and info["subject"] == "other"
    # both candidates are in the tables
    assert "device|cand|torch|all|geomean" in numbers(page) and "device|other|torch|all|geomean" in numbers(page)


def test_family_map_from_manifest(tmp_path, results_csv):
    def family(m, n, k):
        return "wide_tiles" if m >= 1024 or n >= 1024 else "small_tiles"
    shapes = {f"{m}x{n}x{k}:fp32": {"family": family(m, n, k), "kernel": f"{family(m, n, k)}_{k}", "params": {}}
              for m in DIMS for n in DIMS for k in KS}
    manifest = tmp_path / "lib" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"version": 1, "shapes": shapes}))
    page, info = build([results_csv], tmp_path / "report.html", manifest=manifest)
    section = page[page.index('id="families"'):page.index('id="failures"')]
    assert ">Which family won where</h2>" in section and "wide_tiles (10)" in section and "small_tiles (8)" in section
    assert sorted(int(f["k"]) for f in figures(page, "family")) == sorted(KS)
    assert info["maps"] == len(figures(page)) + len(KS)
    # the per-family geomeans are summarize's over that family's shapes
    rows = read_csv(results_csv)
    wide = [r for r in rows if family(r["m"], r["n"], r["k"]) == "wide_tiles"]
    want = next(s for s in summarize(wide) if (s["mode"], s["method"], s["baseline"], s["class"])
                == ("device", "cand", "cublas_best", "all"))
    assert numbers(page)["device|cand|cublas_best|family:wide_tiles|geomean"] == want["geomean"]


@pytest.mark.parametrize("content, words", [
    ("not json", "not a JSON manifest"),
    (json.dumps({"kernels": []}), 'needs a "shapes" object'),
    (json.dumps({"shapes": {"64x64": {"family": "a"}}}), "is not MxNxK:acc"),
    (json.dumps({"shapes": {"64x64x64:fp32": {"kernel": "a"}}}), 'needs a "family" string'),
])
def test_bad_manifest_is_one_line(tmp_path, capsys, results_csv, content, words):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(content)
    assert main(["report", str(results_csv), "-o", str(tmp_path / "r.html"), "--manifest", str(manifest)]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("kernelrl:") and words in lines[0], lines


def test_missing_csv_is_one_line_and_exit_code_2(tmp_path, capsys, results_csv):
    missing = tmp_path / "nowhere" / "results.csv"
    out = tmp_path / "report.html"
    assert main(["report", str(results_csv), str(missing), "-o", str(out)]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1, lines
    assert lines[0].startswith("kernelrl:") and str(missing) in lines[0] and "no such file" in lines[0]
    assert not out.exists()


def test_not_a_results_csv_is_one_line(tmp_path, capsys):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    assert main(["report", str(other), "-o", str(tmp_path / "r.html")]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and "not a kernelrl results CSV" in lines[0]


def test_unknown_method_is_one_line(tmp_path, capsys, results_csv):
    assert main(["report", str(results_csv), "-o", str(tmp_path / "r.html"), "--method", "nope"]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and "--method nope" in lines[0] and "cand" in lines[0]


def test_cli_writes_atomically_over_an_old_page(tmp_path, capsys, results_csv):
    pytest.importorskip("matplotlib")
    out = tmp_path / "report.html"
    out.write_text("old")
    assert main(["report", str(results_csv), "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left behind
    assert "report" in capsys.readouterr().out


def test_database_gives_the_csv_numbers(tmp_path):
    """A dummy bench writes a database and a CSV; both make the same tables (the CSV rounds to 6 digits)."""
    db, csv_path = tmp_path / "r.db", tmp_path / "r.csv"
    assert main(["bench", "--runner", "dummy", "--shapes", "64x64x64,256x1024x64", "--mode", "device",
                 "--db", str(db), "--csv", str(csv_path)]) == 0
    from_db, _ = build([db], tmp_path / "db.html")
    from_csv, _ = build([csv_path], tmp_path / "csv.html")
    a, b = numbers(from_db), numbers(from_csv)
    assert a.keys() == b.keys() and a
    assert all(a[k] == pytest.approx(b[k], rel=1e-4) for k in a)
    assert "Recorded environment" in from_db


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run_chromium(args: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """Chromium in its own process group, so a hung browser and its helpers all go on timeout."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"chromium did not finish in {timeout} s")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.mark.skipif(_chromium() is None, reason="needs chromium or chromium-browser on PATH")
def test_page_renders_in_headless_chromium(tmp_path, results_csv):
    page_path = tmp_path / "report.html"
    build([results_csv], page_path)
    shot = tmp_path / "shot.png"
    common = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              f"--user-data-dir={tmp_path / 'profile'}"]
    url = page_path.resolve().as_uri()
    done = _run_chromium([*common, f"--screenshot={shot}", "--window-size=1400,2000", url])
    assert shot.is_file(), done.stderr[-2000:]
    assert shot.stat().st_size > 10_000
    try:
        from PIL import Image
    except ImportError:
        pass
    else:
        with Image.open(shot) as img:
            assert img.size == (1400, 2000)
            colors = img.convert("RGB").getcolors(maxcolors=1_000_000)
            assert colors is None or len(colors) > 50  # text, tables and maps, not a blank page
    dom = _run_chromium([*common, "--dump-dom", url]).stdout
    assert "<h1>kernelrl report</h1>" in dom and "Speedup maps" in dom
    assert dom.count('class="map speedup"') == len(MODES) * len(MAP_BASELINES) * len(KS)
