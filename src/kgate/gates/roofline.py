"""The roofline: how close a measured time is to what the device can do, and whether it is
possible at all.

The reference module may declare its work: `get_flops()` (floating-point operations) and
`get_bytes()` (bytes that must cross memory) at the op-point. With the device's peaks, no
program can take less than max(flops / peak FLOP/s, bytes / peak bytes/s). A time below
that floor is a measurement artifact (an unsynchronized call, a result computed elsewhere or
earlier, a clock that lies, or a declaration that overstates the work), never a win: it is an
integrity FAIL. Otherwise each leg gets its achieved TFLOP/s, GB/s, and its roofline
utilization (the floor over the measured time: 1.0 is the roofline).

Peaks are upper bounds, chosen so an honest program never reads as impossible: a TPU's from
jax's own table (its fastest floating-point rate), a GPU's from its vendor's datasheet, a
CPU's from a ceiling no core reaches (CPU_GHZ_CEILING, CPU_FLOPS_PER_CYCLE and
CPU_BYTES_PER_CYCLE per core, over every core: what an L1-resident loop of 512-bit fused
multiply-adds could do).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kgate.gates.common import Check

CPU_GHZ_CEILING = 6.0  # no shipping core sustains more
CPU_FLOPS_PER_CYCLE = 64.0  # two 512-bit FMA units, 16 float32 lanes, 2 flops per FMA
CPU_BYTES_PER_CYCLE = 192.0  # two 64-byte loads and one 64-byte store per cycle from L1

# Dense (no sparsity) peaks from the vendors' datasheets: the fastest floating-point rate
# (FP8 tensor cores) and HBM bandwidth.
GPU_PEAKS: dict[str, tuple[float, float, str]] = {
    "H200": (1979e12, 4.8e12, "NVIDIA H200 datasheet (SXM): FP8 1,979 TFLOPS dense, HBM3e 4.8 TB/s"),
    "H100": (1979e12, 3.35e12, "NVIDIA H100 datasheet (SXM): FP8 1,979 TFLOPS dense, HBM3 3.35 TB/s"),
}


@dataclass(frozen=True)
class Peaks:
    flops_per_s: float
    bytes_per_s: float
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"flops_per_s": self.flops_per_s, "bytes_per_s": self.bytes_per_s, "source": self.source}


def cpu_peaks(cores: int) -> Peaks:
    hz = CPU_GHZ_CEILING * 1e9
    return Peaks(cores * hz * CPU_FLOPS_PER_CYCLE, cores * hz * CPU_BYTES_PER_CYCLE,
                 f"a ceiling for {cores} CPU core(s): {CPU_GHZ_CEILING:g} GHz x {CPU_FLOPS_PER_CYCLE:g} flops and "
                 f"{CPU_BYTES_PER_CYCLE:g} bytes per cycle per core")


def gpu_peaks(device_kind: str) -> Peaks | None:
    for name, (flops, bandwidth, source) in GPU_PEAKS.items():
        if name.lower() in device_kind.lower():
            return Peaks(flops, bandwidth, source)
    return None


def peaks_for(platform: str, kind: str, tpu: tuple[float, float, str] | None, cores: int) -> Peaks | None:
    """The device's peaks: a TPU's from jax's own table (`tpu`), an H100/H200's from its datasheet,
    a CPU's ceiling from its cores; None for a device kgate has no figures for."""
    if tpu:
        return Peaks(*tpu)
    if platform == "gpu":
        return gpu_peaks(kind)
    if platform == "cpu":
        return cpu_peaks(cores)
    return None


@dataclass(frozen=True)
class Work:
    """What the reference declares the op-point costs (None: not declared)."""

    flops: float | None = None
    bytes: float | None = None

    @property
    def declared(self) -> bool:
        return self.flops is not None or self.bytes is not None

    def to_json(self) -> dict[str, Any]:
        return {"flops": self.flops, "bytes": self.bytes}


def work_problem(name: str, value: Any) -> str:
    """Why a declared amount cannot be used ('' when it can)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name}() returned {value!r}, not a number"
    if not math.isfinite(value) or value < 0:
        return f"{name}() returned {value!r}, not a finite count of at least 0"
    return ""


def floor_s(work: Work, peaks: Peaks) -> float:
    """The least time any program can take for this work on this device."""
    times = [0.0]
    if work.flops is not None:
        times.append(work.flops / peaks.flops_per_s)
    if work.bytes is not None:
        times.append(work.bytes / peaks.bytes_per_s)
    return max(times)


def leg_numbers(work: Work, peaks: Peaks, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {"seconds": seconds}
    if work.flops is not None:
        out["tflops"] = work.flops / seconds / 1e12 if seconds > 0 else math.inf
    if work.bytes is not None:
        out["gb_per_s"] = work.bytes / seconds / 1e9 if seconds > 0 else math.inf
    out["roofline_util"] = floor_s(work, peaks) / seconds if seconds > 0 else math.inf
    return out


def evaluate(work: Work, peaks: Peaks, seconds: Mapping[str, float]) -> tuple[Check, dict[str, Any]]:
    """`physically_possible`: every leg's median time at or above the floor; and the numbers."""
    floor = floor_s(work, peaks)
    numbers = {"work": work.to_json(), "peaks": peaks.to_json(), "floor_s": floor,
               "legs": {leg: leg_numbers(work, peaks, s) for leg, s in seconds.items()}}
    below = {leg: s for leg, s in seconds.items() if s < floor}
    if below:
        said = ", ".join(f"the {leg}'s median {s * 1e6:.4g} us" for leg, s in below.items())
        fix = ("correct get_flops/get_bytes: they overstate the op-point's work" if len(below) == len(seconds)
               else "a time below the device's floor is an artifact (an unsynchronized call, work done outside the "
               "timed call, a patched clock), never a speedup: find what the candidate's timed call skips.")
        return Check("physically_possible", "FAIL",
                     f"{said} is below the physical floor {floor * 1e6:.4g} us (declared {_work_text(work)} at "
                     f"{_peaks_text(peaks)}, {peaks.source})", fix), numbers
    util = ", ".join(f"{leg} {numbers['legs'][leg]['roofline_util']:.3g}" for leg in seconds)
    return Check("physically_possible", "PASS",
                 f"every leg at or above the physical floor {floor * 1e6:.4g} us ({_work_text(work)}); roofline "
                 f"utilization {util}"), numbers


def _work_text(work: Work) -> str:
    parts = []
    if work.flops is not None:
        parts.append(f"{work.flops:.4g} flops")
    if work.bytes is not None:
        parts.append(f"{work.bytes:.4g} bytes")
    return " and ".join(parts)


def _peaks_text(peaks: Peaks) -> str:
    return f"{peaks.flops_per_s / 1e12:.4g} TFLOP/s and {peaks.bytes_per_s / 1e9:.4g} GB/s"
