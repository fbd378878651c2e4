"""A registered Gymnasium MuJoCo env, run by Fontaine's driver through a small adapter file (issue 34).

`fontaine-eval --env gym:MuJoCoPickAndPlace-v1` runs so101-nexus-mujoco's env through the same driver,
rows, videos, reads and pre-registration as a native env, with the adapter Fontaine ships for it
(engine/envs/gym_adapters/); any other registered env takes an adapter file a lab writes, a YAML with
`gym: ID` (`--env path/to/adapter.yaml`). The adapter names what the env's Python knows and its MJCF
does not say: the object and the target (a body, or a height above where the object started), the
policy's cameras (the model's, or declared by position, look-at point and field of view), the jaws
(geoms or whole bodies), Fontaine's success test with its tolerances, and the key of the env's own
success in `info`.

The env runs as it is: `reset(seed=seed)` draws its scene, `step(action)` moves it, at its own control
period, each 30 Hz tick taking the env steps that end within it (2, 2, 1, ... at so101-nexus's 50 Hz)
with the tick's joint targets as the action. Fontaine's readings (the object's base, uprightness, speed,
contacts, grasp, the arm's speed) come from the env's own `model` and `data`, so the grasp fields and
every row field mean what they mean for a native env; the env's own success is reported beside
Fontaine's (`env_success`, `env_success_tick`). Fontaine adds nothing to the env's scene (no walls,
no solver), and its reset is the env's (no strikes).

The content hash covers the adapter (its file and what it declares), the env's id, its keyword
arguments, the distribution that provides it and its version, and the compiled model the env builds
(its MJB bytes).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.envs.declare import CONTROL_HZ, EnvFileError, _Reader, read_cameras, read_success
from engine.envs.mjcf_scan import _read_bounded
from engine.envs.spec import NAME_RE, BoundsSpec, EnvError, EnvSpec, GraspSpec, ResetSpec, SuccessSpec

PREFIX = "gym:"
ADAPTERS = Path(__file__).with_name("gym_adapters")  # the adapters Fontaine ships, one per env id
SHIPPED = {"MuJoCoPickAndPlace-v1": "nexus-pick-and-place.yaml", "MuJoCoPickLift-v1": "nexus-pick-lift.yaml"}
KEYS = ("gym", "import", "kwargs", "name", "description", "task", "object", "target", "cameras", "success", "grasp",
        "bounds", "episode", "step_seconds", "success_key")
ID_RE = re.compile(r"[A-Za-z0-9_./-]{1,128}")
_ADAPTER_LINE = re.compile(rb"^gym:[ \t]", re.M)


def is_gym_ref(ref) -> bool:
    """`gym:ID`: a registered Gymnasium env with the adapter Fontaine ships for it."""
    return isinstance(ref, str) and ref.startswith(PREFIX)


def is_adapter_file(ref) -> bool:
    """A YAML env file whose `gym:` line makes it an adapter of a Gymnasium env."""
    try:
        return bool(_ADAPTER_LINE.search(_read_bounded(Path(ref).expanduser())))
    except OSError:
        return False


def adapter_path(ref: str) -> Path:
    """The adapter of `ref`: gym:ID's shipped one, or the file itself."""
    if is_gym_ref(ref):
        gym_id = ref[len(PREFIX):]
        if gym_id not in SHIPPED:
            raise EnvError(f"--env {ref}: Fontaine ships no adapter for {gym_id!r} (it has: "
                           f"{', '.join(PREFIX + k for k in SHIPPED)}); write one, a YAML with gym: {gym_id} naming "
                           "its object, target and cameras (docs/envs.md), and give --env path/to/adapter.yaml")
        return ADAPTERS / SHIPPED[gym_id]
    return Path(ref).expanduser().resolve()


@dataclass(frozen=True)
class Adapter:
    path: Path
    gym_id: str
    imports: tuple[str, ...]
    kwargs: dict
    name: str
    description: str
    task: str | None  # None: the env's own task_description
    object_body: str
    target_body: str | None  # a body the object is taken to ...
    lift_m: float | None  # ... or a point this high above where the object started (a lift)
    cameras: dict
    camera_decls: dict
    success: dict
    jaws: dict  # {"geoms": [a, b]} or {"bodies": [a, b]}
    bounds: dict
    episode_seconds: float
    step_seconds: float | None  # None: the env's dt, else 1 / metadata render_fps
    success_key: str
    text: str = field(default="", repr=False)


def read_adapter(path: Path) -> Adapter:
    """Read and check an adapter file: every problem, one line each with its line (EnvFileError)."""
    raw, text, r = _Reader.open(path, "adapter file", KEYS, "gym:, object:, target:")
    text_field = functools.partial(r.text, raw)

    gym_id = text_field("gym")
    if gym_id and not ID_RE.fullmatch(gym_id):
        r.err(("gym",), f"{gym_id!r} is not a Gymnasium env id")
    imports = raw.get("import", [])
    imports = [imports] if isinstance(imports, str) else imports
    if not (isinstance(imports, list) and all(isinstance(m, str) and m for m in imports)):
        r.err(("import",), f"{imports!r}: the modules that register the env (e.g. so101_nexus_mujoco)")
        imports = []
    kwargs = raw.get("kwargs", {})
    if not isinstance(kwargs, dict):
        r.err(("kwargs",), "a mapping of gymnasium.make's keyword arguments")
        kwargs = {}
    name = text_field("name")
    if name and not NAME_RE.fullmatch(name):
        r.err(("name",), f"{name!r}: use lower-case letters, digits and '-' (at most 64)")
    description = text_field("description", required=False) or f"{gym_id} through {path.name}"
    task = text_field("task", required=False) or None
    object_body = text_field("object")
    target = raw.get("target")
    target_body, lift_m = None, None
    if isinstance(target, str) and target:
        target_body = target
    elif isinstance(target, dict) and set(target) == {"above_start_m"}:
        lift_m = r.number(("target", "above_start_m"), target["above_start_m"], 0.0, 1.0)
    else:
        r.err(("target",), f"{target!r}: a body the object is taken to, or {{above_start_m: H}} (a lift)")
    cams, decls = read_cameras(r, raw)
    success = read_success(r, raw)
    grasp = r.section(raw, "grasp", {}, optional=("jaw_geoms", "jaw_bodies"))
    jaws = {}
    for key, kind in (("jaw_geoms", "geoms"), ("jaw_bodies", "bodies")):
        v = grasp.get(key)
        if v is None:
            continue
        if not (isinstance(v, list) and len(v) == 2 and all(isinstance(j, str) and j for j in v)):
            r.err(("grasp", key), f"{v!r} is not two names")
        else:
            jaws[kind] = v
    if len(jaws) != 1:
        r.err(("grasp",), "name the two jaws: jaw_geoms: [fixed, moving] or jaw_bodies: [fixed, moving] "
              "(every colliding geom of each body)")
    bounds = r.section(raw, "bounds", {"table_xy_m": [-0.25, 0.65, -0.40, 0.40], "table_top_z_m": 0.0,
                                       "floor_z_m": None})
    txy = r.vector(("bounds", "table_xy_m"), bounds["table_xy_m"], 4, -5.0, 5.0)
    top = r.number(("bounds", "table_top_z_m"), bounds["table_top_z_m"], -2.0, 2.0)
    floor = top if bounds["floor_z_m"] is None else r.number(("bounds", "floor_z_m"), bounds["floor_z_m"], -5.0, 2.0)
    episode = r.section(raw, "episode", {"seconds": 20.0})
    seconds = r.number(("episode", "seconds"), episode["seconds"], 0.1, 3600.0)
    step = raw.get("step_seconds")
    step = None if step is None else r.number(("step_seconds",), step, 1e-4, 1.0)
    key = text_field("success_key", required=False) or "success"
    if r.out:
        raise EnvFileError(path, r.out)
    return Adapter(path=path, gym_id=gym_id, imports=tuple(imports), kwargs=kwargs, name=name, description=description,
                   task=task, object_body=object_body, target_body=target_body, lift_m=lift_m, cameras=cams,
                   camera_decls=decls, success=success, jaws=jaws,
                   bounds={"table_xy_m": txy, "table_top_z_m": top, "floor_z_m": floor}, episode_seconds=seconds,
                   step_seconds=step, success_key=key, text=text)


def make_gym(adapter: Adapter):
    """gymnasium.make(the adapter's env): its registering modules imported first; anything that fails,
    one line (exit 2)."""
    import gymnasium

    for module in adapter.imports:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            hint = " (pip install 'fontaine[nexus]')" if module.startswith("so101_nexus") else ""
            raise EnvError(f"adapter {adapter.path}: module {module!r} cannot be imported ({exc}){hint}") from None
    try:
        return gymnasium.make(adapter.gym_id, **adapter.kwargs)
    except Exception as exc:  # noqa: BLE001 - the env's own code may fail in any way: one line
        raise EnvError(f"adapter {adapter.path}: gymnasium.make({adapter.gym_id!r}) failed "
                       f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})") from None


def _distribution(env) -> str:
    """The distribution that provides a made env, with its version ("so101-nexus-mujoco 0.3.12")."""
    top = type(env.unwrapped).__module__.split(".")[0]
    names = importlib.metadata.packages_distributions().get(top, [])
    return " ".join(f"{n} {importlib.metadata.version(n)}" for n in names) or top


def _model_sha256(model) -> str:
    import mujoco

    buf = np.empty(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buf)
    return hashlib.sha256(buf.tobytes()).hexdigest()


@functools.lru_cache(maxsize=8)
def _probe(path: str, text: str) -> tuple[str, str]:
    """(what the hash covers of the made env, its problems): one gymnasium.make per adapter and content."""
    adapter = read_adapter(Path(path))
    env = make_gym(adapter)
    try:
        u = env.unwrapped
        problems = _problems(adapter, env)
        ident = json.dumps({"gym": adapter.gym_id, "kwargs": adapter.kwargs, "provided_by": _distribution(env),
                            "model_sha256": _model_sha256(u.model)}, sort_keys=True, default=str)
    finally:
        env.close()
    return ident, "\n".join(problems)


def _problems(adapter: Adapter, env) -> list[str]:
    """What the adapter names that the env's model lacks, one line each."""
    import mujoco

    from engine.sim.scene import JOINT_NAMES

    model = getattr(env.unwrapped, "model", None)
    if not isinstance(model, mujoco.MjModel):
        return [f"{adapter.gym_id}: not a MuJoCo env (its unwrapped env has no MjModel `model`)"]
    out = []

    def has(kind, name):
        return mujoco.mj_name2id(model, kind, name) >= 0

    missing = [j for j in JOINT_NAMES if not has(mujoco.mjtObj.mjOBJ_JOINT, j)]
    if missing:
        out.append(f"{adapter.gym_id}: its model lacks the SO-101's joints {', '.join(missing)}")
    shape = getattr(env.action_space, "shape", None)
    if shape != (len(JOINT_NAMES),):
        out.append(f"{adapter.gym_id}: its action space is {env.action_space}, not six joint targets "
                   "(shoulder_pan ... gripper, radians; so101-nexus: control_mode pd_joint_pos)")
    bodies = [model.body(i).name for i in range(model.nbody)]
    for what, name in (("object", adapter.object_body), ("target", adapter.target_body)):
        if name and not has(mujoco.mjtObj.mjOBJ_BODY, name):
            out.append(f"{adapter.path}: {what}: body {name!r} is not in {adapter.gym_id}'s model (bodies: "
                       f"{', '.join(b for b in bodies if b)})")
    if has(mujoco.mjtObj.mjOBJ_BODY, adapter.object_body):
        b = model.body(adapter.object_body).id
        if model.body_jntnum[b] != 1 or model.jnt_type[model.body_jntadr[b]] != mujoco.mjtJoint.mjJNT_FREE:
            out.append(f"{adapter.path}: object: body {adapter.object_body!r} has no free joint")
    for kind, names in adapter.jaws.items():
        obj = mujoco.mjtObj.mjOBJ_GEOM if kind == "geoms" else mujoco.mjtObj.mjOBJ_BODY
        out += [f"{adapter.path}: grasp: jaw {kind[:-1]} {n!r} is not in {adapter.gym_id}'s model" for n in names
                if not has(obj, n)]
    for key, cam in adapter.cameras.items():
        if key not in adapter.camera_decls and not has(mujoco.mjtObj.mjOBJ_CAMERA, cam):
            known = [model.camera(i).name for i in range(model.ncam)]
            out.append(f"{adapter.path}: cameras.{key}: camera {cam!r} is not in {adapter.gym_id}'s model (cameras: "
                       f"{', '.join(known) or 'none'}); or declare one: {{pos, look_at, fovy}}")
    return out


class GymEnvSpec(EnvSpec):
    """An EnvSpec whose scene is a Gymnasium env's: hashed by what `_probe` reads of it."""

    def scene_xml(self) -> str:
        adapter = self.make.adapter
        return _probe(str(adapter.path), adapter.text)[0]


def load(ref: str) -> EnvSpec:
    """The EnvSpec of `gym:ID` (its shipped adapter) or of an adapter file; EnvError when it cannot run."""
    from engine.sim.metrics import GRASP_HOLD_TICKS, PREDICATES

    adapter = read_adapter(adapter_path(ref))
    _, problems = _probe(str(adapter.path), adapter.text)
    if problems:
        raise EnvFileError(adapter.path, problems.splitlines())
    test = adapter.success["test"]
    tol = {k: adapter.success[k] for t in test for k in PREDICATES[t][0]}
    b = adapter.bounds
    x0, x1, y0, y1 = b["table_xy_m"]
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    label = adapter.path.name if adapter.path.parent != ADAPTERS else f"engine/envs/gym_adapters/{adapter.path.name}"
    return GymEnvSpec(
        name=adapter.name,
        description=adapter.description,
        object_body=adapter.object_body,
        target_body=adapter.target_body or "",
        cameras=dict(adapter.cameras),
        reset=ResetSpec(distribution=f"{adapter.gym_id}'s own: reset(seed=seed)", params={
            "gym": adapter.gym_id, "kwargs": adapter.kwargs, "imports": list(adapter.imports),
            "step_seconds": adapter.step_seconds, "target": adapter.target_body or {"above_start_m": adapter.lift_m},
            "jaws": adapter.jaws, "success_key": adapter.success_key, "camera_decls": adapter.camera_decls},
            settle_ticks=0, strike_rule="none: the env's reset is its own", max_strikes=0),
        success=SuccessSpec(predicate="all of: " + "; ".join(f"{t} ({PREDICATES[t][1]})" for t in test)
                            + ", held for hold_ticks ticks in a row (success latches); the env's own success beside it",
                            tolerances=tol, hold_ticks=adapter.success["hold_ticks"]),
        progress=("distance from the object's base to the target's centre (XY), or to the point above_start_m "
                  "above where it started (3-D): progress_cm = initial - min, progress_final_cm = initial - final"),
        grasp=GraspSpec(jaw_geoms=tuple(adapter.jaws.get("geoms") or adapter.jaws["bodies"]), hold_ticks=GRASP_HOLD_TICKS,
                        rule="both jaws (" + ("geoms" if "geoms" in adapter.jaws else "every colliding geom of each body")
                        + ") touch the object and nothing else supports it"),
        bounds=BoundsSpec(floor_z_m=b["floor_z_m"], table_top_z_m=b["table_top_z_m"], table_xy_m=(x0, x1, y0, y1),
                          room_xy_m=(cx - 1.5, cx + 1.5, cy - 1.5, cy + 1.5), ceiling_z_m=b["floor_z_m"] + 2.5),
        episode_seconds=adapter.episode_seconds,
        control_hz=CONTROL_HZ,
        task=adapter.task or "",
        build_scene=_no_scene,
        make=_Maker(adapter),
        files=((label, adapter.path),),
    )


def _no_scene():
    raise EnvError("a Gymnasium env builds its own scene")


class _Maker:
    """EnvSpec.make for an adapter (its qualified name is what the canonical JSON records)."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self.__module__, self.__qualname__ = __name__, "GymSceneEnv"

    def __call__(self, spec: EnvSpec, render_size: int = 224):
        return _env_class()(self.adapter, render_size=render_size)


@functools.cache
def _env_class():
    from engine.sim.env import ObjectEnv

    return type("GymSceneEnv", (_GymScene, ObjectEnv), {"__module__": __name__, "__qualname__": "GymSceneEnv"})


class _GymScene:
    """A Gymnasium env driven at Fontaine's 30 Hz tick (engine.envs.SimEnv), read from its own model and
    data; the readings, contacts, images and video frames are ObjectEnv's (`_env_class`)."""

    def __init__(self, adapter: Adapter, *, render_size: int = 224):
        from engine.sim.geometry import colliding_geoms, rest_box
        from engine.sim.metrics import PREDICATES
        from engine.sim.scene import JOINT_NAMES

        self.adapter = adapter
        self.gym = make_gym(adapter)
        u = self.gym.unwrapped
        model, data = u.model, u.data
        obj = model.body(adapter.object_body)
        arm_root = model.body_rootid[model.jnt_bodyid[model.joint(JOINT_NAMES[0]).id]]
        if "geoms" in adapter.jaws:
            jaws = tuple(adapter.jaws["geoms"])
        else:
            jaws = tuple([int(g) for g in colliding_geoms(model, model.body(b).id) if model.geom_bodyid[g] == model.body(b).id]
                         for b in adapter.jaws["bodies"])
        super().__init__(model, data=data, render_size=render_size, cameras=adapter.cameras,
                         obj_joint=int(model.body_jntadr[obj.id]),
                         is_obj=model.body_rootid[model.geom_bodyid] == obj.id,
                         is_arm=model.body_rootid[model.geom_bodyid] == arm_root, jaw_geoms=jaws,
                         target_body=adapter.target_body or adapter.object_body, rest_box=rest_box(model, obj.id),
                         free_cameras={adapter.cameras[k]: c for k, c in adapter.camera_decls.items()})
        self._target_id = model.body(adapter.target_body).id if adapter.target_body else None
        self._dt = adapter.step_seconds or getattr(u, "dt", None) or 1.0 / float(u.metadata["render_fps"])
        self._space = self.gym.action_space
        self._tol = {k: adapter.success[k] for t in adapter.success["test"] for k in PREDICATES[t][0]}
        self._steps = 0
        self._start = None
        self.env_success_tick: int | None = None
        self.task = adapter.task or getattr(u, "task_description", None) or ""

    def target(self) -> np.ndarray:
        """The target: its body's position, or the point above_start_m over where the object started."""
        if self._target_id is not None:
            return self.data.xpos[self._target_id].copy()
        return np.asarray(self._start, dtype=float) + np.array([0.0, 0.0, self.adapter.lift_m])

    def reset(self, seed: int) -> int:
        from engine.envs.place_scene import _metrics_class

        _, info = self.gym.reset(seed=int(seed))
        self._steps, self.tick = 0, 0
        self.env_success_tick = 0 if info.get(self.adapter.success_key) else None
        reading = self.reading()
        self._start = reading.pos.copy()
        target = self.target()
        z = float(target[2]) + self.adapter.success.get("place_height_m", 0.0)
        self.metrics = _metrics_class()(self.adapter.success["test"], self._tol, self.adapter.success["hold_ticks"],
                                        target, z, reading, 0, dist3d=self.adapter.lift_m is not None)
        return 0

    def step_tick(self, targets_rad: np.ndarray) -> None:
        """One 30 Hz tick: the env steps that end within it, each with the tick's targets as its action."""
        targets = np.clip(np.asarray(targets_rad, dtype=float).reshape(6), self._ranges[:, 0], self._ranges[:, 1])
        action = np.clip(targets, self._space.low, self._space.high).astype(self._space.dtype)
        end = (self.tick + 1) / CONTROL_HZ
        while (self._steps + 1) * self._dt <= end + 1e-9:
            _, _, _, _, info = self.gym.step(action)
            self._steps += 1
            if self.env_success_tick is None and info.get(self.adapter.success_key):
                self.env_success_tick = self.tick + 1
        self.tick += 1
        if self.metrics is not None:
            self.metrics.update(self.reading())

    def row(self) -> dict:
        row = super().row()
        row["env_success"] = self.env_success_tick is not None
        row["env_success_tick"] = self.env_success_tick
        return row

    def privileged(self) -> dict:
        """True poses for a privileged policy (the scripted oracle), as the env-file scenes give them."""
        reading = self.reading()
        pos, quat, target = reading.pos, self.object_quat(), self.target()
        if self.adapter.lift_m is not None:
            return {"plan": "lift", "object_pos": pos, "object_quat": quat, "lift_height_m": self.adapter.lift_m,
                    "target_pos": target}
        z = float(target[2]) + self.adapter.success.get("place_height_m", 0.0)
        return {"plan": "place", "object_pos": pos, "object_quat": quat, "target_pos": target, "boat_pos": pos,
                "boat_quat": quat, "boat_linvel": self.object_linvel(), "disk_pos": target,
                "disk_radius": self._tol.get("radius_m", 0.045), "disk_top_z": z}

    def film_cameras(self) -> tuple[str, ...]:
        return tuple(self.cameras[k] for k in ("front", "wrist"))

    def close(self) -> None:
        super().close()
        self.gym.close()


def list_lines() -> list[str]:
    """One line per shipped adapter: `gym:ID<TAB>description<TAB>source`, or why it cannot be loaded."""
    out = []
    for gym_id in SHIPPED:
        ref = PREFIX + gym_id
        try:
            spec = load(ref)
            out.append(f"{ref}\t{spec.description}\tgym ({_probe_source(spec)})")
        except EnvError as exc:
            out.append(f"{ref}\t(cannot be loaded: {exc.one_line()})\tgym")
    return out


def _probe_source(spec: EnvSpec) -> str:
    adapter = spec.make.adapter
    return json.loads(_probe(str(adapter.path), adapter.text)[0])["provided_by"]
