"""Checkpoints by Hugging Face id, downloaded and pinned, against a loopback fake hub.

A threaded HTTP server on 127.0.0.1 (tests/fake_hub.py) serves the tiny checkpoint as
`someone/tiny-molmoact2` at one commit; HF_ENDPOINT points at it and every test has its own
HF_HOME. Download, cache hit, offline, wrong revision, unknown repo, refused token and a
connection cut mid-file each end in the snapshot or in one clear CheckpointError line.
"""

from __future__ import annotations

import pytest

from engine.policies.molmoact2 import CheckpointError, load_policy
from engine.policies.molmoact2.checkpoint import download_snapshot, resolve_checkpoint
from tests.fake_hub import FakeHub

pytest_plugins = ("tests.engine.molmoact2_fixtures",)

REPO = "someone/tiny-molmoact2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub(tiny_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "5")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "5")
    with FakeHub(REPO, tiny_dir, commit=COMMIT) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg, msg
    return msg


def test_download_then_cache_hit_then_offline(hub, tmp_path, monkeypatch, tiny_dir):
    lines: list[str] = []
    path, commit = download_snapshot(REPO, log=lines.append)
    assert commit == COMMIT and path.name == COMMIT
    assert path.is_relative_to(tmp_path / "hf-home" / "hub")
    assert (path / "model.safetensors").read_bytes() == (tiny_dir / "model.safetensors").read_bytes()
    assert (path / "action_tokenizer" / "tokenizer.json").is_file()
    assert any(hub.endpoint in line for line in lines) and any(COMMIT in line for line in lines)
    transfers = hub.file_gets()
    assert transfers == len(hub.files)

    again, commit = download_snapshot(REPO, COMMIT, log=lines.append)  # pinned commit: served from the cache
    assert again == path and commit == COMMIT and hub.file_gets() == transfers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(hub.requests)
    offline, commit = download_snapshot(REPO, log=lines.append)
    assert offline == path and commit == COMMIT and len(hub.requests) == before  # no network at all


def test_offline_and_not_cached_is_one_line(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError) as exc:
        download_snapshot(REPO, log=lambda _: None)
    msg = one_line(exc)
    assert "HF_HUB_OFFLINE is set" in msg and REPO in msg and "hf-home" in msg
    assert hub.requests == []


def test_wrong_revision_and_unknown_repo_are_one_line(hub):
    with pytest.raises(CheckpointError) as exc:
        download_snapshot(REPO, "f" * 40, log=lambda _: None)
    msg = one_line(exc)
    assert "f" * 40 in msg and "does not exist" in msg
    with pytest.raises(CheckpointError) as exc:
        download_snapshot(REPO, "v9", log=lambda _: None)
    assert "'v9'" in one_line(exc)
    with pytest.raises(CheckpointError) as exc:
        download_snapshot("someone/nothing-here", log=lambda _: None)
    msg = one_line(exc)
    assert "someone/nothing-here not found" in msg and hub.endpoint in msg and "HF_TOKEN" in msg


def test_token_is_sent_and_never_printed(hub, monkeypatch):
    hub.token = "hf_secret_test_token_123"
    with pytest.raises(CheckpointError) as exc:
        download_snapshot(REPO, log=lambda _: None)
    assert "HF_TOKEN" in one_line(exc)
    monkeypatch.setenv("HF_TOKEN", hub.token)
    lines: list[str] = []
    path, commit = download_snapshot(REPO, log=lines.append)
    assert commit == COMMIT and (path / "config.json").is_file()
    assert not any(hub.token in line for line in lines)


def test_connection_cut_mid_file_is_one_line_and_a_rerun_completes(hub):
    hub.cut_after = 1000
    with pytest.raises(CheckpointError) as exc:
        download_snapshot(REPO, log=lambda _: None)
    msg = one_line(exc)
    assert "failed" in msg and "run again" in msg and REPO in msg
    hub.cut_after = None
    path, commit = download_snapshot(REPO, log=lambda _: None)
    assert commit == COMMIT and (path / "model.safetensors").stat().st_size == len(hub.files["model.safetensors"])


def test_a_hub_id_loads_records_its_commit_and_a_differing_pin_is_refused(hub):
    policy = load_policy(REPO, pathway="flow", decode="flow", dtype="fp32", device="cpu")
    d = policy.describe()
    assert d["checkpoint_source"] == "hub" and d["revision"] == COMMIT and d["pin"] == COMMIT
    pinned = load_policy(REPO, pathway="flow", decode="flow", dtype="fp32", device="cpu", revision=COMMIT, pinned=True)
    assert pinned.describe()["revision"] == COMMIT
    with pytest.raises(CheckpointError) as exc:
        load_policy(REPO, pathway="flow", decode="flow", dtype="fp32", device="cpu", revision="main", pinned=True)
    msg = one_line(exc)
    assert msg.startswith("refused:") and "'main'" in msg and COMMIT in msg


def test_a_local_directory_is_pinned_by_its_weights(tiny_dir, tmp_path):
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_dir, ckpt)
    policy = load_policy(str(ckpt), pathway="flow", decode="flow", dtype="fp32", device="cpu")
    pin = policy.describe()["pin"]
    assert pin == "sha256:" + policy.describe()["weights_sha256"]
    load_policy(str(ckpt), pathway="flow", decode="flow", dtype="fp32", device="cpu", revision=pin, pinned=True)
    with pytest.raises(CheckpointError) as exc:
        load_policy(str(ckpt), pathway="flow", decode="flow", dtype="fp32", device="cpu",
                    revision="sha256:" + "0" * 64, pinned=True)
    assert one_line(exc).startswith("refused:")


def test_the_tiny_model_is_pinned_by_local(tiny_cache):
    policy = load_policy("tiny", cache_dir=tiny_cache, pathway="flow", decode="flow", dtype="fp32", device="cpu",
                         revision="local", pinned=True)
    assert policy.describe()["pin"] == "local"
    with pytest.raises(CheckpointError) as exc:
        load_policy("tiny", cache_dir=tiny_cache, pathway="flow", decode="flow", dtype="fp32", device="cpu",
                    revision="0123456789abcdef0123456789abcdef01234567", pinned=True)
    assert one_line(exc).startswith("refused:")


def test_resolve_refuses_what_is_neither_a_directory_nor_a_hub_id(tmp_path):
    with pytest.raises(CheckpointError) as exc:
        resolve_checkpoint(str(tmp_path / "a" / "b" / "c"))
    assert "not a directory" in one_line(exc)
