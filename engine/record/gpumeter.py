"""Busy GPU-hours from NVML, where a driver is present (optional: `pip install '.[gpu]'`).

The gates judge allocated GPU-hours (wall x GPUs held), which is what a budget pays for. NVML's
utilisation, integrated over the run, says how much of that the GPUs were actually busy; it is
recorded beside it, labelled, and is simply absent where NVML is not (no driver, no package).
"""

from __future__ import annotations

import os
import time


class GpuMeter:
    def __init__(self, gpus: int):
        self.busy_hours: float | None = None
        self.source = "nvml: no GPU held"
        self._handles: list = []
        self._last: float | None = None
        if gpus <= 0:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            indices = _visible_indices(gpus, pynvml.nvmlDeviceGetCount())
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in indices]
            self._nvml = pynvml
        except ImportError:
            self.source = "nvml unavailable (install the gpu extra: pip install '.[gpu]')"
            return
        except Exception as exc:  # NVMLError_LibraryNotFound and friends: no driver here
            self.source = f"nvml unavailable ({type(exc).__name__})"
            return
        self.busy_hours = 0.0
        self.source = f"nvml utilisation of {len(self._handles)} GPU(s)"

    def sample(self) -> None:
        """Integrate utilisation since the last sample (a step function: the latest reading holds)."""
        if not self._handles:
            return
        now = time.monotonic()
        if self._last is not None:
            try:
                util = sum(self._nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self._handles) / 100.0
            except Exception:
                util = 0.0
            self.busy_hours += util * (now - self._last) / 3600.0
        self._last = now


def _visible_indices(gpus: int, count: int) -> list[int]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    picked = [int(x) for x in visible.split(",") if x.strip().isdigit()]
    return (picked or list(range(count)))[:gpus]
