"""The env contract: the built-in boat-on-disk declared through it, the registry, and envs a lab
brings as `fontaine.envs` entry points (an installed distribution, found by importlib.metadata)."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from engine.envs import DEFAULT_ENV, EnvError, EnvSpec, SimEnv, UnknownEnv, env_names, get_env, list_lines, registry
from engine.policies.base import DEFAULT_TASK
from engine.sim import env as sim_env
from engine.sim import metrics, scene
from prereg.core.errors import EXIT_USAGE, UsageError


@pytest.fixture(scope="module")
def boat():
    return get_env("boat-on-disk")


def test_boat_on_disk_is_the_default_and_listed_first_name_first(boat):
    assert DEFAULT_ENV == "boat-on-disk" == env_names()[0]
    first = list_lines()[0]
    assert first.split("\t")[0] == "boat-on-disk" and "built-in" in first


def test_the_built_in_declares_the_numbers_the_simulator_uses(boat):
    assert boat.success.tolerances == {"disk_radius_m": scene.DISK_RADIUS_M, "height_tolerance_m": metrics.HEIGHT_TOLERANCE_M,
                                       "upright_cos_min": metrics.UPRIGHT_COS, "still_speed_m_s": metrics.STILL_SPEED_M_S}
    assert metrics.DISK_RADIUS_M == scene.DISK_RADIUS_M
    assert boat.success.hold_ticks == metrics.SUCCESS_HOLD_TICKS
    assert boat.reset.params["spawn_radius_m"] == list(sim_env.SPAWN_RADIUS_M)
    assert (boat.reset.settle_ticks, boat.reset.max_strikes) == (sim_env.SETTLE_TICKS, sim_env.MAX_RESET_STRIKES)
    assert boat.task == DEFAULT_TASK and boat.control_hz == 30 and boat.episode_seconds == 30.0
    assert boat.bounds.floor_z_m == scene.FLOOR_Z < 0 and dict(boat.cameras) == {"front": "front", "wrist": "wrist"}
    assert any(label.endswith("so101_new_calib.xml") for label, _ in boat.files)
    assert all(path.is_file() for _, path in boat.files)


def test_the_built_in_makes_a_boat_env_whose_scene_has_everything_it_names(boat):
    env = boat.create(render_size=32)
    try:
        assert isinstance(env, SimEnv) and isinstance(env, sim_env.BoatEnv) and env.cameras == dict(boat.cameras)
        assert boat.problems(env.model) == []
        broken = dataclasses.replace(boat, object_body="benchy", cameras={"front": "front", "wrist": "hand"})
        problems = broken.problems(env.model)
        assert len(problems) == 2 and "'benchy'" in problems[0] and "'hand'" in problems[1]
    finally:
        env.close()


def test_the_content_hash_is_stable_and_follows_the_declaration_and_the_files(boat, tmp_path, monkeypatch):
    digest = boat.sha256()
    assert len(digest) == 64 and int(digest, 16) >= 0
    # from here the scene's XML (1.5 s to write) is held fixed: what else moves the hash
    monkeypatch.setattr(EnvSpec, "scene_xml", lambda self: "<mujoco/>")
    base = boat.sha256()
    assert boat.sha256() == base
    looser = dataclasses.replace(boat, success=dataclasses.replace(
        boat.success, tolerances={**boat.success.tolerances, "height_tolerance_m": 0.003}))
    assert looser.sha256() != base
    mesh = tmp_path / "boat.stl"
    mesh.write_bytes(b"solid boat")
    with_mesh = dataclasses.replace(boat, files=(*boat.files, ("lab/boat.stl", mesh)))
    before = with_mesh.sha256()
    mesh.write_bytes(b"solid boat, edited")
    assert with_mesh.sha256() not in (before, base)
    mesh.unlink()
    with pytest.raises(EnvError, match="lab/boat.stl"):
        with_mesh.sha256()
    monkeypatch.undo()
    assert boat.sha256() == digest  # the scene's XML is written the same every time


def test_an_unknown_env_is_one_usage_line(boat):
    with pytest.raises(UnknownEnv) as info:
        get_env("stack-cube")
    assert isinstance(info.value, UsageError) and info.value.exit_code == EXIT_USAGE
    assert "boat-on-disk" in info.value.one_line() and "\n" not in info.value.one_line()
    with pytest.raises(UnknownEnv, match="not an env name"):
        get_env("../etc")


def test_env_names_are_checked():
    with pytest.raises(EnvError, match="lower-case"):
        dataclasses.replace(get_env("boat-on-disk"), name="Boat On Disk")


def _install_lab(tmp_path, monkeypatch, entry_points: str, module: str) -> None:
    """A distribution on sys.path, as `pip install` leaves one: a dist-info with entry_points.txt."""
    info = tmp_path / "fake_lab_envs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-lab-envs\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[fontaine.envs]\n" + textwrap.dedent(entry_points))
    (tmp_path / "fake_lab_envs.py").write_text(textwrap.dedent(module))
    monkeypatch.syspath_prepend(str(tmp_path))


LAB_MODULE = """
    import dataclasses
    from engine.envs import get_env

    def lab_boat():
        return dataclasses.replace(get_env("boat-on-disk"), name="lab-boat", description="the lab's own boat")

    SPEC = dataclasses.replace(get_env("boat-on-disk"), name="lab-spec", description="a spec, not a callable")

    def misnamed():
        return dataclasses.replace(get_env("boat-on-disk"), name="something-else")

    def broken():
        raise RuntimeError("mesh folder not found")

    def shadow():
        return dataclasses.replace(get_env("boat-on-disk"), description="tries to replace the built-in")
"""


def test_a_lab_env_installed_as_an_entry_point_is_listed_and_loaded(tmp_path, monkeypatch):
    _install_lab(tmp_path, monkeypatch, """
        lab-boat = fake_lab_envs:lab_boat
        lab-spec = fake_lab_envs:SPEC
        misnamed = fake_lab_envs:misnamed
        broken = fake_lab_envs:broken
        missing = fake_lab_no_such_module:x
        boat-on-disk = fake_lab_envs:shadow
    """, LAB_MODULE)
    names = env_names()
    assert names[0] == "boat-on-disk" and {"lab-boat", "lab-spec", "broken", "missing"} <= set(names)
    assert names.count("boat-on-disk") == 1 and "tries to replace" not in get_env("boat-on-disk").description
    assert get_env("lab-boat").description == "the lab's own boat"
    assert get_env("lab-spec").name == "lab-spec"
    with pytest.raises(EnvError, match="something-else"):
        get_env("misnamed")
    with pytest.raises(EnvError, match="mesh folder not found"):
        get_env("broken")
    with pytest.raises(EnvError, match="cannot be loaded"):
        get_env("missing")
    lines = {line.split("\t")[0]: line for line in list_lines()}
    assert "fake-lab-envs" in lines["lab-boat"] and "the lab's own boat" in lines["lab-boat"]
    assert "cannot be loaded" in lines["broken"] and "mesh folder not found" in lines["broken"]


def test_the_entry_point_lookup_can_be_replaced(monkeypatch):
    import importlib.metadata

    ep = importlib.metadata.EntryPoint(name="patched", value="engine.envs.boat_on_disk:spec", group="fontaine.envs")
    monkeypatch.setattr(registry, "_entry_points", lambda: [ep])
    assert env_names() == ["boat-on-disk", "pick-lift", "patched"]
    with pytest.raises(EnvError, match="'boat-on-disk'"):  # the spec's name must be the entry point's
        get_env("patched")
