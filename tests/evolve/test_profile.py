"""Nsight Compute: the command line for a metric set, and parsing its CSV (a hand-written sample of the raw and
details pages) into what is stored with a candidate and shown in prompts."""

import pytest

from kernelrl.evolve import profile
from kernelrl.evolve.profile import (METRIC_SETS, ProfileError, format_summary, ncu_command, parse_ncu_csv,
                                     parse_sets, summarize)
from kernelrl.workloads.hgemm import GemmProblem

GEMM = "void kr_wmma::gemm_kernel<true, true>(const __half *, const __half *, __half *, int, int, int)"
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
# ncu --csv --page raw --print-units base: program output and ==PROF== lines first, then a header, a units row
# and one row per kernel; numbers may carry thousands separators.
RAW = f'''==PROF== Connected to process 4242 (/usr/bin/python3.11)
==PROF== Profiling "gemm_kernel": 0%....50%....100% - 9 passes
==PROF== Profiling "zero_kernel": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","lts__t_sector_hit_rate.pct","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active","sm__warps_active.avg.pct_of_peak_sustained_active","{STALL.format("barrier")}","{STALL.format("long_scoreboard")}","{STALL.format("mio_throttle")}"
"","","","","","","","","","","","byte","%","nsecond","%","%","%","","",""
"0","4242","python3.11","gpu-node","void kr_wmma::zero_kernel(__half *, int)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","0","0.85","2,112","0","0","45.20","0","0.12","0"
"1","4242","python3.11","gpu-node","{GEMM}","1","7","(256, 1, 1)","(32, 32, 1)","0","9.0","100,663,296","41.27","1,234,567","78.45","62.10","12.37","1.02","3.41","0.57"
==PROF== Disconnected from process 4242
'''  # noqa: E501 (verbatim ncu CSV rows)
DETAILS = f'''"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.11","gpu-node","{GEMM}","1","7","(256, 1, 1)","(32, 32, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","1,234.57"
"0","4242","python3.11","gpu-node","{GEMM}","1","7","(256, 1, 1)","(32, 32, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","78.45"
'''  # noqa: E501 (verbatim ncu CSV rows)


def test_the_command_keeps_clocks_and_asks_for_the_raw_csv():
    cmd = ncu_command(["python", "-m", "driver"], ["l2", "dram"], ncu="/opt/ncu")
    assert cmd[:3] == ["/opt/ncu", "--clock-control", "none"]
    assert cmd[cmd.index("--page") + 1] == "raw" and "--csv" in cmd and cmd[-3:] == ["python", "-m", "driver"]
    assert cmd[cmd.index("--metrics") + 1].split(",") == METRIC_SETS["l2"] + METRIC_SETS["dram"]


def test_the_command_profiles_only_the_drivers_range():
    cmd = ncu_command(["prog"])
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"


def test_every_default_set_is_in_the_command():
    metrics = ncu_command(["prog"])[ncu_command(["prog"]).index("--metrics") + 1].split(",")
    assert {"lts__t_sector_hit_rate.pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed", STALL.format("long_scoreboard"),
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"} <= set(metrics)


def test_an_unknown_metric_set_is_named():
    with pytest.raises(ProfileError, match="unknown metric set cache"):
        parse_sets("l2,cache")


def test_all_means_every_default_set():
    assert parse_sets("all") == profile.DEFAULT_SETS


def test_the_raw_page_gives_one_entry_per_kernel_with_numbers():
    kernels = parse_ncu_csv(RAW)
    assert [k["name"] for k in kernels] == ["void kr_wmma::zero_kernel(__half *, int)", GEMM]
    gemm = kernels[1]["metrics"]
    assert gemm["gpu__time_duration.sum"] == 1234567.0 and gemm["dram__bytes_read.sum"] == 100663296.0
    assert kernels[1]["units"]["gpu__time_duration.sum"] == "nsecond"


def test_the_summary_is_the_longest_kernel_with_ranked_stalls():
    s = summarize(parse_ncu_csv(RAW))
    assert s["kernel"] == GEMM and s["kernels"] == 2 and s["time_us"] == pytest.approx(1234.567)
    assert list(s["stalls"]) == ["long_scoreboard", "barrier", "mio_throttle"]
    assert s["metrics"]["lts__t_sector_hit_rate.pct"] == 78.45


def test_the_details_page_is_read_too():
    s = summarize(parse_ncu_csv(DETAILS))
    assert s["time_us"] == pytest.approx(1234.57) and s["metrics"]["lts__t_sector_hit_rate.pct"] == 78.45


def test_output_without_csv_is_a_profile_error():
    with pytest.raises(ProfileError, match="no ncu CSV"):
        parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access GPU counters\n")


def test_the_prompt_line_names_the_metrics():
    line = format_summary({**summarize(parse_ncu_csv(RAW)), "shape": "4096x4096x4096"})
    assert line.startswith("- Nsight Compute on 4096x4096x4096, 2 kernels per call: kernel time 1234.6 µs")
    assert "L2 hit rate 78.5 %" in line and "achieved occupancy 12.4 %" in line and "long_scoreboard 3.41" in line


def test_without_ncu_collection_says_so_in_one_line(monkeypatch):
    monkeypatch.setattr(profile, "ncu_path", lambda: None)
    out = profile.collect_hgemm("/nowhere/lib.so", GemmProblem(64, 64, 64))
    assert out["error"] == profile.missing_message() and "\n" not in out["error"] and "ncu" in out["error"]
    assert out["skip_rest"]
