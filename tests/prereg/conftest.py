"""Fixtures for the prereg tests: copies of the shipped examples and hand-made run dirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from prereg.document.launch import resolve_launch
from prereg.rundir.rows import complete_row
from tests.fake_hub import FakeHub

EXAMPLES = Path(__file__).resolve().parents[2] / "prereg" / "examples"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture
def demo(tmp_path) -> Path:
    """A private copy of the frozen demo pre-registration."""
    dst = tmp_path / "demo.md"
    shutil.copy(EXAMPLES / "demo.md", dst)
    return dst


@pytest.fixture
def discrete(tmp_path) -> Path:
    dst = tmp_path / "discrete_ar_100.md"
    shutil.copy(EXAMPLES / "discrete_ar_100.md", dst)
    return dst


def make_row(seed: int, **kw) -> dict:
    base = dict(seed=seed, success=False, progress_cm=0.0, progress_final_cm=0.0, reset_strikes=0,
                predicts=10, zero_fallbacks=0, mask_violations=0, status="ok")
    base.update(kw)
    return complete_row(base)


def launched_manifest(doc: Path, arm: str, **over) -> dict:
    """The manifest `fontaine-eval --prereg DOC --arm ARM` writes (engine/cli/resolve.py `_resolve_prereg` and
    engine/run/driver.py `_write_manifest`), the fields provenance reads; `over` replaces top-level ones."""
    spec = resolve_launch(doc, arm)
    model = spec.policy != "scripted"
    manifest = {
        "run_id": f"{spec.prereg_id}-{arm}", "arm": spec.arm,
        "prereg": {"id": spec.prereg_id, "sha256": spec.prereg_sha256, "path": spec.prereg_path},
        "policy": {"kind": spec.policy, "checkpoint": spec.checkpoint, "decode": spec.decode, "dtype": spec.dtype,
                   "device": None, "convmap": spec.convmap or "official",
                   "convmap_overrides": list(spec.convmap_overrides), "norm_tag": spec.norm_tag or "so100_so101_molmoact2",
                   "flow_steps": spec.flow_steps or 10, "task": "put the boat on the disk", "inject_latency_ms": 0.0,
                   "extra": {}},
        "policy_resolved": {"policy": spec.policy, "revision": spec.revision if model else None},
        "seeds": list(spec.seeds), "episode_seconds": spec.episode_seconds, "workers": spec.workers,
    }
    manifest.update(over)
    return manifest


@pytest.fixture
def run_dir(tmp_path):
    """run_dir(name, rows, status=None, manifest=None, tail='', launched=(DOC, ARM)) -> a run directory.

    `launched` writes the manifest a launch of that arm from that document writes."""

    def make(name: str, rows: list[dict], status: dict | None = None, manifest: dict | None = None,
             tail: str = "", launched: tuple[Path, str] | None = None) -> Path:
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        text = "".join(json.dumps(r) + "\n" for r in rows) + tail
        (d / "rows.jsonl").write_text(text)
        if status is not None:
            (d / "status.json").write_text(json.dumps(status))
        if launched is not None:
            manifest = {**launched_manifest(*launched), **(manifest or {})}
        if manifest is not None:
            (d / "manifest.json").write_text(json.dumps(manifest))
        return d

    return make


HF_TOKEN = "hf_fakeTOKEN0123456789abcdefSECRET"  # the publish tests' token: it must never be written or sent


@pytest.fixture
def hf_env(tmp_path, monkeypatch):
    """A Hugging Face environment of this test's own: the token from HF_TOKEN, no saved token."""
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_TOKEN_PATH", str(tmp_path / "no-saved-token"))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)  # as read at import: a suite run offline still reaches the fake
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    for name in ("HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    return monkeypatch


@pytest.fixture
def hub(hf_env):
    with FakeHub(token=HF_TOKEN) as fake:
        hf_env.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake


SCRIPTED_DOC = """---
fontaine: fontaine-prereg/1
id: two-oracles
title: two scripted arms
created: 2026-01-01
arms:
  - name: a
    policy: scripted
protocol:
  seeds: 0-5
  episode_seconds: 20
  workers: 1
reads:
  primary: successes
gates:
  gpu_hours: 0.1
---

Plain words.
"""


def scripted_doc(tmp_path, frozen="2026-01-01T00:00:00Z", amendments=()):
    """A frozen document with scripted arm `a`; each amendment (YAML data, freeze time) appended and frozen."""
    from prereg.document.seal import amend, freeze

    doc = tmp_path / "two.md"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(SCRIPTED_DOC)
    freeze(doc, now=frozen)
    for data, at in amendments:
        amend(doc, title=data.pop("title", "amendment"), why="Why.", data=data)
        freeze(doc, now=at)
    return doc
