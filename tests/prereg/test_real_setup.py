"""A selected seed's setup (real/seed_<n>.json and .png): written in cm and degrees, read back, and a file
that is not a setup said as such (never a traceback, never a wrong pose shown)."""

from __future__ import annotations

import json
import math
import os

from prereg.rundir.real_setup import read_setup, setup_paths, write_setup


def test_a_setup_reads_back_in_cm_and_degrees_with_its_picture(tmp_path):
    write_setup(tmp_path, 7, "boat-on-disk", (0.3, -0.051, 0.0), math.radians(-45), (0.2, 0.1, 0.0), b"\x89PNG fake")
    setup, why = read_setup(tmp_path, 7)
    assert why is None and setup.object_cm == (30.0, -5.1, 0.0) and setup.object_yaw_deg == -45.0
    assert setup.target_cm == (20.0, 10.0, 0.0) and setup.picture == setup_paths(tmp_path, 7)[1]
    assert setup.lines()[0] == "object  x +30.0 cm  y -5.1 cm  z +0.0 cm  yaw -45°"
    write_setup(tmp_path, 8, "boat-on-disk", (0.3, 0.0, 0.0), 0.0, (0.2, 0.1, 0.0), None)  # no GL: no picture
    assert read_setup(tmp_path, 8)[0].picture is None


def test_a_missing_or_wrong_setup_says_what_to_do(tmp_path):
    setup, why = read_setup(tmp_path, 3)
    assert setup is None and "--sim-predictions" in why
    js, _ = setup_paths(tmp_path, 3)
    js.parent.mkdir(parents=True)
    js.write_text(json.dumps({"schema": 1, "seed": 4, "env": "x", "object_cm": [1, 2, 3], "object_yaw_deg": 0,
                              "target_cm": [1, 2, 3]}))
    assert read_setup(tmp_path, 3)[0] is None and "not a setup of seed 3" in read_setup(tmp_path, 3)[1]
    js.write_text(json.dumps({"schema": 1, "seed": 3, "env": "x", "object_cm": [1, "2", 3], "object_yaw_deg": 0,
                              "target_cm": [1, 2, 3]}))
    assert read_setup(tmp_path, 3)[0] is None
    js.unlink()
    os.mkfifo(js)  # a FIFO where the file was: said, never a hang
    setup, why = read_setup(tmp_path, 3)
    assert setup is None and "FIFO" in why
