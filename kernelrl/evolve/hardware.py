"""What the prompt says about the GPU: name, SM count, shared memory and register limits.

nvidia-smi names the card but does not give SM counts, and the parent process must not open a CUDA context (the
runner's workers own the GPU), so the limits come from a small table of known parts; an unknown or absent GPU gets
the Hopper limits the kernel spaces are checked against, marked as assumed."""

from __future__ import annotations

from dataclasses import dataclass

from kernelrl import environment
from kernelrl.space.base import HOPPER

_HOPPER = {**HOPPER, "arch": "sm_90a", "l2_mb": 50}
# Substring of the nvidia-smi name → limits. Order matters: the first match wins.
KNOWN = [
    ("H100 PCIe", {**_HOPPER, "sms": 114}),
    ("H200", _HOPPER),  # also GH200; before H20, which is a substring of it
    ("H100", _HOPPER),
    ("H800", _HOPPER),
    ("H20", {**_HOPPER, "sms": 78, "l2_mb": 60}),
    ("A100", {"sms": 108, "smem_per_block": 163 * 1024, "smem_per_sm": 164 * 1024, "regs_per_sm": 65536,
              "max_threads_per_block": 1024, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32, "arch": "sm_80",
              "l2_mb": 40}),
    ("L40S", {"sms": 142, "smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024, "regs_per_sm": 65536,
              "max_threads_per_block": 1024, "max_threads_per_sm": 1536, "max_blocks_per_sm": 24, "arch": "sm_89",
              "l2_mb": 96}),
    ("RTX 4090", {"sms": 128, "smem_per_block": 99 * 1024, "smem_per_sm": 100 * 1024, "regs_per_sm": 65536,
                  "max_threads_per_block": 1024, "max_threads_per_sm": 1536, "max_blocks_per_sm": 24,
                  "arch": "sm_89", "l2_mb": 72}),
]


@dataclass
class Hardware:
    name: str
    limits: dict
    assumed: bool  # True when the limits are Hopper's by default, not the named card's

    def describe(self) -> str:
        lim = self.limits
        lines = [f"- GPU: {self.name}" + (" (limits below assumed: Hopper H100/H200)" if self.assumed else ""),
                 f"- {lim['sms']} SMs, architecture {lim['arch']}; L2 {lim['l2_mb']} MB",
                 f"- shared memory: up to {lim['smem_per_block'] // 1024} KiB per block (opt-in above 48 KiB with "
                 f"cudaFuncSetAttribute), {lim['smem_per_sm'] // 1024} KiB per SM",
                 f"- {lim['regs_per_sm']} registers per SM; at most {lim['max_threads_per_block']} threads per block, "
                 f"{lim['max_threads_per_sm']} per SM, {lim['max_blocks_per_sm']} blocks per SM"]
        return "\n".join(lines)


def detect(gpu_name: str | None = None) -> Hardware:
    """The card named by `gpu_name` (or by nvidia-smi when None), with its limits."""
    if gpu_name is None:
        gpu_name = environment.gpu_info().get("gpu")
    for key, limits in KNOWN:
        if gpu_name and key.lower() in gpu_name.lower():
            return Hardware(gpu_name, dict(limits), assumed=False)
    return Hardware(gpu_name or "no GPU visible here", dict(_HOPPER), assumed=True)
