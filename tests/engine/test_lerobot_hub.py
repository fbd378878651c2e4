"""A lerobot checkpoint by Hugging Face id: downloaded from a loopback fake hub, pinned to its commit."""

from __future__ import annotations

import pytest

pytest.importorskip("lerobot")

from engine.policies.lerobot_policy import LerobotError, check_feeds, forget_probes, load_policy, probe  # noqa: E402
from tests.engine.lerobot_fixtures import build_checkpoint  # noqa: E402
from tests.fake_hub import FakeHub  # noqa: E402

REPO = "lab/tiny-act"
COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    for var in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "5")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "5")
    ckpt = build_checkpoint(tmp_path / "act", "act")
    forget_probes()
    with FakeHub(REPO, ckpt, commit=COMMIT) as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake
    forget_probes()


def test_a_hub_id_is_downloaded_loaded_and_pinned_to_its_commit(hub, tmp_path, monkeypatch):
    policy = load_policy(REPO, device="cpu")
    d = policy.describe()
    assert d["checkpoint_source"] == "hub" and d["revision"] == COMMIT and d["pin"] == COMMIT
    assert d["checkpoint_path"].startswith(str(tmp_path / "hf-home")) and d["policy_type"] == "act"
    forget_probes()
    assert load_policy(REPO, revision=COMMIT, pinned=True, device="cpu").describe()["pin"] == COMMIT
    forget_probes()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # from the cache, no network
    before = len(hub.requests)
    assert check_feeds(REPO, COMMIT, ("front", "wrist")).state == "observation.state"
    assert len(hub.requests) == before


def test_a_revision_the_repo_lacks_is_one_line(hub):
    with pytest.raises(LerobotError) as exc:
        load_policy(REPO, revision="f" * 40, device="cpu")
    assert "does not exist" in str(exc.value) and "\n" not in str(exc.value)


def test_a_launch_asks_the_hub_once_per_environment(hub, monkeypatch):
    """The CLI's checks, the probe, the feature plan and the serving mode each want the checkpoint's
    folder: an unpinned id (its main branch) is resolved once in all (each asked the hub again, a
    timeout each when unreachable; a pinned commit already cached asks nothing)."""
    from engine.policies.lerobot_policy import release_state_box, serving_of

    serving_of.cache_clear()
    assert probe(REPO).revision == COMMIT
    asked = len(hub.requests)
    assert asked > 0
    assert check_feeds(REPO, None, ("front", "wrist")).state == "observation.state"
    assert serving_of(REPO) in ("chunk", "step")
    release_state_box(REPO)
    assert len(hub.requests) == asked
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # another environment: looked up again, from the cache
    forget_probes()
    assert probe(REPO).revision == COMMIT and len(hub.requests) == asked
    import shutil

    monkeypatch.delenv("HF_HUB_OFFLINE")  # the first environment again, its snapshot deleted from the cache
    shutil.rmtree(probe(REPO).path)
    forget_probes()
    assert probe(REPO).path.is_dir() and len(hub.requests) > asked


def test_an_edited_file_in_the_hub_cache_is_not_the_pinned_commit(hub, monkeypatch):
    """A commit pins the hub's files; the cache's copy is checked against the hub's own names for them
    (the git blob id here, the sha256 for an LFS file), so an edited cache does not pass as the commit."""
    import os
    from pathlib import Path

    path = Path(probe(REPO, COMMIT).path)
    forget_probes()
    blob = Path(os.path.realpath(path / "policy_postprocessor.json"))
    blob.write_text(blob.read_text().replace("}", " }", 1))  # still JSON, another byte string
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(LerobotError, match="policy_postprocessor.json: the Hugging Face cache's copy is not the hub's"):
        load_policy(REPO, revision=COMMIT, pinned=True, device="cpu")
