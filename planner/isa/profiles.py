"""Built-in device profiles of the simulated deterministic ISA.

Figures are the published ones where a real chip is named (see ``docs/isa.md`` for the
sources); the ISA itself is simulated, so a profile is a faithful size and speed, not
a claim of cycle accuracy on the real chip.
"""

from __future__ import annotations

from planner.hardware import MemoryLevel, Profile

__all__ = ["PROFILES", "get_profile"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
GB = 10**9

# Jouppi et al., ISCA 2023: a TPU v4 TensorCore at 1050 MHz with 128x128 MXUs, 32 GiB HBM2 at
# 1200 GB/s, 128 MiB CMEM, 16 MiB VMEM per TensorCore (two cores: 32 MiB). Shared by the
# `tpu-v4` profile and `tpu-v4-host`, which adds the host's memory below HBM.
_TPU_V4_CORE = dict(clock_hz=1_050_000_000, mxu_rows=128, mxu_cols=128, vector_lanes=1024)
_TPU_V4_LEVELS = (
    MemoryLevel("vmem", 32 * MiB, 1_050_000_000 * 1024 * 4),
    MemoryLevel("cmem", 128 * MiB, 1_050_000_000 * 1024),
    MemoryLevel("hbm", 32 * GiB, 1200 * GB),
)

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        # Jouppi et al., ISCA 2017: 256x256 MXU at 700 MHz, 24 MiB unified buffer + 4 MiB
        # accumulators on chip, 8 GiB DDR3 at 34 GB/s.
        Profile(
            name="tpu-v1", clock_hz=700_000_000, mxu_rows=256, mxu_cols=256, vector_lanes=256,
            memory=(
                MemoryLevel("onchip", 28 * MiB, 700_000_000 * 256 * 4),
                MemoryLevel("ddr3", 8 * GiB, 34 * GB),
            ),
            dma_latency_cycles=100,
            description="TPU v1 (inference): 256x256 int8 MXU, 700 MHz, 28 MiB on chip, 8 GiB DDR3",
        ),
        # The TensorCore's figures are above (_TPU_V4_CORE, _TPU_V4_LEVELS).
        Profile(
            name="tpu-v4", **_TPU_V4_CORE, memory=_TPU_V4_LEVELS, dma_latency_cycles=500,
            description="TPU v4 TensorCore: 128x128 MXU, 1050 MHz, 32 MiB VMEM, 128 MiB CMEM, 32 GiB HBM2",
        ),
        # Four levels: the TPU v4 TensorCore above (same paper) with the host's memory below
        # HBM, reached over the chip's PCIe Gen3 x16 host interface (Google Cloud, "TPU v4"
        # system architecture page: 32 GiB HBM2 at 1200 GB/s, x16 PCIe Gen3), i.e.
        # 16 lanes x 8 GT/s x 128/130 = 15.75 GB/s per direction. The host's capacity is a VM
        # choice, not a chip figure: 96 GiB per chip is an assumption. HBM stays the main
        # level (weights live there); DMAs join vmem and cmem to each other and to HBM, and
        # only HBM to the host.
        Profile(
            name="tpu-v4-host", **_TPU_V4_CORE,
            memory=_TPU_V4_LEVELS + (MemoryLevel("host", 96 * GiB, 15_750_000_000),),
            dma_latency_cycles=500,
            description="TPU v4 TensorCore with host memory: vmem, cmem, 32 GiB HBM2 (main), host over PCIe Gen3 x16",
            main_level="hbm",
            dma_paths=(("vmem", "cmem"), ("vmem", "hbm"), ("cmem", "hbm"), ("hbm", "host")),
        ),
        # A small edge NPU in the class of mobile accelerators: 32x32 MAC array at 1 GHz,
        # 4 MiB SRAM, 4 GiB LPDDR4X at 17 GB/s.
        Profile(
            name="edge-npu", clock_hz=1_000_000_000, mxu_rows=32, mxu_cols=32, vector_lanes=64,
            memory=(
                MemoryLevel("sram", 4 * MiB, 1_000_000_000 * 64 * 2),
                MemoryLevel("lpddr", 4 * GiB, 17 * GB),
            ),
            dma_latency_cycles=50,
            description="Edge NPU: 32x32 MAC array, 1 GHz, 4 MiB SRAM, 4 GiB LPDDR4X",
        ),
        # A neutral processor for plain task graphs whose ops give explicit cycles:
        # 1 GHz, so one device cycle is one reference cycle.
        Profile(
            name="generic", clock_hz=1_000_000_000, mxu_rows=1, mxu_cols=1, vector_lanes=1,
            memory=(MemoryLevel("mem", 1 << 40, 1000 * GB),),
            dma_latency_cycles=0,
            description="Generic 1 GHz processor for task graphs with explicit cycles",
        ),
    )
}


def get_profile(name: str) -> Profile:
    """The built-in profile called ``name``.

    >>> get_profile("tpu-v1").mxu_rows
    256
    >>> get_profile("tpu-v9")
    Traceback (most recent call last):
    ...
    KeyError: "unknown ISA profile 'tpu-v9'; known: edge-npu, generic, tpu-v1, tpu-v4, tpu-v4-host"
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown ISA profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None
