"""Busy GPU-hours: NVML where present, a labelled absence where not (as on these CPU machines)."""

from __future__ import annotations

import sys
import types

from engine.record.gpumeter import GpuMeter, _visible_indices


def test_no_gpu_held_measures_nothing():
    meter = GpuMeter(0)
    meter.sample()
    assert meter.busy_hours is None and "no GPU held" in meter.source


def test_missing_driver_is_labelled_not_raised(monkeypatch):
    fake = types.ModuleType("pynvml")

    class NVMLError_LibraryNotFound(Exception):
        pass

    def init():
        raise NVMLError_LibraryNotFound("libnvidia-ml.so.1 not found")

    fake.nvmlInit = init
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meter = GpuMeter(1)
    meter.sample()
    assert meter.busy_hours is None and meter.source == "nvml unavailable (NVMLError_LibraryNotFound)"


def test_visible_devices_pick_the_indices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert _visible_indices(2, 8) == [0, 1]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert _visible_indices(1, 8) == [3]
