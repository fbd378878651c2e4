"""The release FAST tokenizer is loaded at one pinned commit, never fetched unpinned, and recorded."""

from __future__ import annotations

import hashlib

import pytest

from engine.policies.molmoact2 import checkpoint as ck

PIN = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def no_download(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("fetched the tokenizer although it is not pinned")

    monkeypatch.setattr(ck, "download_snapshot", refuse)


def test_no_pin_anywhere_is_refused_before_any_fetch_and_says_how_to_pin(tmp_path, monkeypatch, no_download):
    monkeypatch.setattr(ck, "RELEASE_FAST_TOKENIZER_REVISION", None)
    with pytest.raises(ck.CheckpointError, match="never fetched unpinned") as err:
        ck.fast_tokenizer_dir(tmp_path)
    assert "--fast-revision COMMIT" in str(err.value) and "fast_revision:" in str(err.value)
    assert ck.FAST_TOKENIZER_SUBDIR in str(err.value)


@pytest.mark.parametrize("where", ["constant", "run"])
@pytest.mark.parametrize("pin", ["main", "v1.0", PIN.upper(), PIN[:12]])
def test_a_pin_that_is_not_a_commit_is_refused_before_any_fetch(tmp_path, monkeypatch, no_download, pin, where):
    monkeypatch.setattr(ck, "RELEASE_FAST_TOKENIZER_REVISION", pin if where == "constant" else None)
    with pytest.raises(ck.CheckpointError, match="is not a 40-hex commit"):
        ck.fast_tokenizer_dir(tmp_path, pin=pin if where == "run" else None)


def test_the_runs_pin_wins_over_the_builds(tmp_path, monkeypatch):
    other = "f" * 40
    snapshot = tmp_path / "snapshots" / other
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text("{}")
    asked = []
    monkeypatch.setattr(ck, "RELEASE_FAST_TOKENIZER_REVISION", PIN)
    monkeypatch.setattr(ck, "download_snapshot", lambda repo, revision, log=None: asked.append(revision) or (snapshot, other))
    path, record = ck.fast_tokenizer_dir(tmp_path / "ckpt", pin=other)
    assert asked == [other] and record["revision"] == other and path == snapshot


def test_the_pinned_commit_is_what_is_fetched_and_recorded(tmp_path, monkeypatch):
    snapshot = tmp_path / "snapshots" / PIN
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text("{}")
    asked = []

    def fake(repo, revision, log=None):
        asked.append((repo, revision))
        return snapshot, PIN

    monkeypatch.setattr(ck, "RELEASE_FAST_TOKENIZER_REVISION", PIN)
    monkeypatch.setattr(ck, "download_snapshot", fake)
    path, record = ck.fast_tokenizer_dir(tmp_path / "ckpt")
    assert asked == [(ck.RELEASE_FAST_TOKENIZER, PIN)] and path == snapshot
    assert record == {"source": "hub", "repo": ck.RELEASE_FAST_TOKENIZER, "revision": PIN, "path": str(snapshot)}
    monkeypatch.setattr(ck, "download_snapshot", lambda repo, revision, log=None: (snapshot, "f" * 40))
    with pytest.raises(ck.CheckpointError, match="resolved to commit"):
        ck.fast_tokenizer_dir(tmp_path / "ckpt")


def test_a_tokenizer_beside_the_weights_needs_no_pin_and_is_recorded_by_hash(tmp_path, monkeypatch, no_download):
    monkeypatch.setattr(ck, "RELEASE_FAST_TOKENIZER_REVISION", None)
    local = tmp_path / ck.FAST_TOKENIZER_SUBDIR
    local.mkdir()
    (local / "tokenizer.json").write_text('{"model": "bpe"}')
    path, record = ck.fast_tokenizer_dir(tmp_path)
    assert path == local and record["source"] == "checkpoint"
    assert record["tokenizer_sha256"] == hashlib.sha256(b'{"model": "bpe"}').hexdigest()
