"""`fontaine-prereg publish` against a loopback fake hub (tests/fake_hub.py, HF_ENDPOINT points at it).

The files arrive in one commit with their paths and contents (the large ones through Xet storage, as
huggingface_hub sends them with hf_xet installed, and through LFS with HF_HUB_DISABLE_XET), this
machine's folders made relative in every text file; the results files record the commit and links
(which resolve on the hub to the same bytes); publishing again sends only what changed, and nothing
(no commit, the records as they were) when nothing did; a refused, unreachable or offline hub, or one
without Xet storage, leaves nothing published and nothing recorded in one line that says which; the
token is in no file, no output and no uploaded byte, and --dry-run lists what would go without a
token or a request. The Space (--space): tests/prereg/test_publish_space.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import urllib.request

import pytest

from prereg import rundir as rd
from prereg.outputs import publish as pub
from prereg.outputs.cli import main
from prereg.outputs.report import build_report
from tests.fake_hub import FakeHub
from tests.prereg.conftest import HF_TOKEN as TOKEN
from tests.prereg.conftest import make_row

NOW = "2026-11-30T09:00:00Z"
REPO = "my-lab/fontaine-reports"
PREREG_ID = "demo-tiny-engine"


def _video(seed: int) -> bytes:
    return b"\x00\x00\x00\x18ftypmp42" + bytes([seed]) * 2000  # not a real mp4: bytes to carry


def reported_runs(run_dir, demo) -> dict:
    """The demo's three arms, every seed filmed, reported: the scripted arm succeeds on 5 seeds,
    tiny-reference knocks seed 2 away (its worst), tiny-masked does neither."""
    def rows(fields):
        return [make_row(s, video=f"{rd.VIDEOS}/rollout_seed{s:03d}.mp4", **fields(s)) for s in range(6)]

    runs = {
        "scripted": run_dir("scripted", rows(lambda s: dict(success=s != 3, progress_cm=8.0, progress_final_cm=7.5)),
                            status={"state": "done"}, launched=(demo, "scripted")),
        "tiny-reference": run_dir("ref", rows(lambda s: dict(progress_final_cm={2: -1.5, 4: -1.1}.get(s, 0.0))),
                                  status={"state": "done"}, launched=(demo, "tiny-reference")),
        "tiny-masked": run_dir("masked", rows(lambda s: dict(progress_final_cm=0.5)),
                               status={"state": "done"}, launched=(demo, "tiny-masked")),
    }
    for d in runs.values():
        (d / rd.VIDEOS).mkdir()
        for s in range(6):
            (d / rd.VIDEOS / f"rollout_seed{s:03d}.mp4").write_bytes(_video(s))
    build_report(demo, runs, now=NOW)
    return runs


def lfs_only(monkeypatch) -> None:
    """HF_HUB_DISABLE_XET, as huggingface_hub read it at import: large files go through LFS, not Xet."""
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_DISABLE_XET", True)


def published_bytes(path, tmp_path) -> bytes:
    """A local file as publish sends it: this machine's folders (the runs', the document's) made relative."""
    return pub.no_local_paths(path.read_bytes(), pub.local_roots(tmp_path / "runs", tmp_path))


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(["publish", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def snapshot(tmp_path) -> dict:
    return {p: p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file() and "hf-home" not in p.parts}


def run_args(runs) -> list[str]:
    return [x for arm, d in runs.items() for x in ("--run", f"{arm}={d}")]


def no_token_anywhere(tmp_path, *texts) -> None:
    needle = TOKEN.encode()
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and needle in p.read_bytes()]
    for text in texts:
        assert TOKEN not in text


@pytest.mark.parametrize("road", ["xet", "lfs"])
def test_publish_sends_one_commit_and_records_it(demo, run_dir, hub, capsys, tmp_path, monkeypatch, road):
    if road == "lfs":
        lfs_only(monkeypatch)
    runs = reported_runs(run_dir, demo)
    reported = {d: (published_bytes(d / rd.RESULTS, tmp_path), published_bytes(d / rd.RESULTS_JSON, tmp_path))
                for d in runs.values()}
    local_md = {d: (d / rd.RESULTS).read_text() for d in runs.values()}
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 0, err
    (commit,) = hub.commits(REPO)
    assert commit.branch == "main" and PREREG_ID in commit.summary
    prefix = PREREG_ID  # the default folder in the repo
    beside = [f"{PREREG_ID}.results.md", f"{PREREG_ID}.paired.tiny-masked-vs-tiny-reference.png"]
    expected = {f"{prefix}/demo.md": published_bytes(demo, tmp_path),
                **{f"{prefix}/{name}": published_bytes(tmp_path / "runs" / name, tmp_path) for name in beside}}
    videos = {"scripted": [0, 1, 2, 4, 5], "tiny-reference": [2], "tiny-masked": []}
    for arm, d in runs.items():
        md, js = reported[d]
        expected[f"{prefix}/{d.name}/{rd.RESULTS}"] = md
        expected[f"{prefix}/{d.name}/{rd.RESULTS_JSON}"] = js
        for name in (rd.CHART, rd.ROWS, rd.MANIFEST, rd.STATUS):
            expected[f"{prefix}/{d.name}/{name}"] = published_bytes(d / name, tmp_path)
        for s in videos[arm]:
            expected[f"{prefix}/{d.name}/{rd.VIDEOS}/rollout_seed{s:03d}.mp4"] = _video(s)
    assert commit.added == expected
    for data in commit.added.values():  # no local absolute path in what was published (the report wrote some)
        assert str(tmp_path).encode() not in data
    assert b"/tmp/" in (runs["scripted"] / rd.MANIFEST).read_bytes()  # ... though the local files hold them
    # the large files (videos, charts: binary) took the road asked for, and arrived whole (commit.added above)
    large = {hashlib.sha256(v).hexdigest() for k, v in commit.added.items() if k.endswith((".mp4", ".png"))}
    assert large and {hub.uploads[h] for h in large} == {road}

    for arm, d in runs.items():
        res = json.loads((d / rd.RESULTS_JSON).read_text())
        p = res[pub.PUBLISHED_KEY]
        assert p["commit"] == commit.oid and p["repo"] == REPO and p["revision"] == "main"
        assert p["commit_url"] == f"{hub.endpoint}/datasets/{REPO}/commit/{commit.oid}"
        assert p["folder_url"] == f"{hub.endpoint}/datasets/{REPO}/tree/{commit.oid}/{prefix}/{d.name}"
        assert sorted(map(int, p["videos"])) == videos[arm]
        assert set(p["files"]) == {rd.RESULTS, rd.RESULTS_JSON, rd.CHART, rd.ROWS, rd.MANIFEST, rd.STATUS}
        for url in [*p["files"].values(), *p["videos"].values()]:  # curl-verified: each link serves the committed bytes
            req = urllib.request.Request(url, headers={"authorization": f"Bearer {TOKEN}"})
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.read() == commit.tree[url.split(f"/resolve/{commit.oid}/", 1)[1]]
        md = (d / rd.RESULTS).read_text()
        (line,) = [x for x in md.splitlines() if x.startswith(pub.PUBLISHED_LINE)]
        assert p["folder_url"] in line and commit.oid[:12] in line
        assert md.startswith(local_md[d])  # the report's text, then the one line
    assert commit.oid in out
    no_token_anywhere(tmp_path, out, err)
    assert not any(TOKEN.encode() in b for b in hub.bodies)


def test_the_discord_results_post_links_the_published_files(demo, run_dir, hub, capsys, tmp_path):
    from console.notify.messages import results_post
    from console.notify.snapshot import read_snapshot

    runs = reported_runs(run_dir, demo)
    scripted = runs["scripted"]
    assert "published" not in results_post(read_snapshot(scripted)).description  # not yet
    assert run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={scripted}")[0] == 0
    p = json.loads((scripted / rd.RESULTS_JSON).read_text())["published"]
    text = results_post(read_snapshot(scripted)).description
    assert f"]({p['folder_url']})" in text and p["commit"][:12] in text
    assert f"[seed 0]({p['videos']['0']})" in text and f"[seed 5]({p['videos']['5']})" in text


def test_publishing_again_sends_only_what_changed_and_nothing_when_nothing_did(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    scripted = runs["scripted"]
    reported = published_bytes(scripted / rd.RESULTS, tmp_path), published_bytes(scripted / rd.RESULTS_JSON, tmp_path)
    assert run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={scripted}")[0] == 0
    (first,) = hub.commits(REPO)
    recorded = (scripted / rd.RESULTS).read_bytes(), (scripted / rd.RESULTS_JSON).read_bytes()
    # the same again: nothing differs, so nothing is sent, no commit is made and the record stays as it was
    code, out, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={scripted}")
    assert code == 0, err
    assert hub.commits(REPO) == [first]
    assert "nothing sent" in out and "already holds these" in out and first.oid[:12] in out and "publishing" not in out
    assert ((scripted / rd.RESULTS).read_bytes(), (scripted / rd.RESULTS_JSON).read_bytes()) == recorded
    # a new report of the same rows: only its files go, the record is replaced (never stacked)
    build_report(demo, runs, now="2026-12-01T10:00:00Z")
    code, out, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={scripted}", "--videos", "none")
    assert code == 0, err
    first, second = hub.commits(REPO)
    assert "sending" in out and "unchanged, not sent" in out
    assert second.added[f"{PREREG_ID}/{scripted.name}/{rd.RESULTS}"] != reported[0]
    assert set(second.added) < set(first.added) | {f"{PREREG_ID}/{PREREG_ID}.results.md"}
    assert not [k for k in second.added if "/videos/" in k or k.endswith(rd.ROWS)]  # the rows did not change
    md = (scripted / rd.RESULTS).read_text()
    assert md.count(pub.PUBLISHED_LINE) == 1 and second.oid[:12] in md and first.oid[:12] not in md
    assert json.loads((scripted / rd.RESULTS_JSON).read_text())["published"]["commit"] == second.oid
    assert b'"published"' not in second.added[f"{PREREG_ID}/{scripted.name}/{rd.RESULTS_JSON}"]  # the report as written


def test_the_runs_are_found_without_run_and_a_branch_is_made_for_revision(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    code, out, err = run_cli(capsys, demo, "--repo", REPO, "--runs-dir", tmp_path / "runs", "--revision", "eval-1",
                             "--path-in-repo", "evals/demo", "--videos", "all", "--private")
    assert code == 0, err
    (commit,) = hub.commits(REPO)
    assert commit.branch == "eval-1" and hub.datasets[REPO].private
    for d in runs.values():
        assert f"evals/demo/{d.name}/{rd.RESULTS_JSON}" in commit.added
        assert sum(k.startswith(f"evals/demo/{d.name}/{rd.VIDEOS}/") for k in commit.added) == 6
        assert json.loads((d / rd.RESULTS_JSON).read_text())["published"]["revision"] == "eval-1"


def test_dry_run_lists_the_files_with_sizes_and_needs_no_token(demo, run_dir, hf_env, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    hf_env.delenv("HF_TOKEN")
    with FakeHub() as fake:
        hf_env.setenv("HF_ENDPOINT", fake.endpoint)
        before = snapshot(tmp_path)
        code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs), "--dry-run", "--video-seeds", "3")
        assert code == 0, err
        assert fake.requests == []
    assert snapshot(tmp_path) == before
    scripted = runs["scripted"].name
    assert f"{PREREG_ID}/{scripted}/{rd.VIDEOS}/rollout_seed003.mp4" in out  # --video-seeds adds seed 3
    assert f"{PREREG_ID}/{scripted}/{rd.ROWS}" in out and f"{PREREG_ID}/demo.md" in out
    line = next(x for x in out.splitlines() if x.endswith(f"{scripted}/{rd.VIDEOS}/rollout_seed000.mp4  (video of seed 0: success)"))
    assert line.split()[0:2] == ["2.0", "kB"]
    assert "in all" in out and "nothing uploaded" in out


@pytest.mark.parametrize("case", ["bad-token", "create-refused", "commit-refused", "server-error", "unreachable",
                                  "offline", "no-xet"])
def test_a_refused_or_unreachable_hub_publishes_nothing_and_records_nothing(demo, run_dir, hf_env, capsys, tmp_path,
                                                                            case):
    runs = reported_runs(run_dir, demo)
    with FakeHub(token=TOKEN) as fake:
        hf_env.setenv("HF_ENDPOINT", fake.endpoint)
        if case == "bad-token":
            hf_env.setenv("HF_TOKEN", "hf_notTheRightOne")
        elif case == "create-refused":
            fake.refuse_create = True
        elif case == "commit-refused":
            fake.refuse_commit = 403
        elif case == "server-error":
            fake.refuse_commit = 500
        elif case == "unreachable":
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            hf_env.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        elif case == "offline":
            hf_env.setenv("HF_HUB_OFFLINE", "1")
        elif case == "no-xet":  # a hub without Xet storage: its write-token endpoint answers 404
            fake.xet = False
        before = snapshot(tmp_path)
        code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
        assert fake.commits(REPO) == []
    assert code == 1
    assert snapshot(tmp_path) == before  # nothing recorded
    (line,) = err.strip().splitlines()
    assert line.startswith("fontaine-prereg: failed: ") and "nothing published" in line
    want = {"bad-token": "401", "create-refused": "403", "commit-refused": "403", "server-error": "500, a server error",
            "unreachable": "cannot reach", "offline": "HF_HUB_OFFLINE",
            "no-xet": "has no Xet storage (it answered 404 to /api/datasets/my-lab/fontaine-reports/xet-write-token/main)"
            }[case]
    assert want in line, line
    if case != "unreachable":  # the hub answered: the line never says it could not be reached
        assert "cannot reach" not in line
    if case == "no-xet":
        assert "HF_HUB_DISABLE_XET=1" in line
    no_token_anywhere(tmp_path, out, err)


def test_a_hub_without_xet_takes_the_large_files_through_lfs_when_xet_is_off(demo, run_dir, hub, capsys, tmp_path,
                                                                             monkeypatch):
    hub.xet = False
    lfs_only(monkeypatch)  # what HF_HUB_DISABLE_XET=1, as the failure line advises, does
    runs = reported_runs(run_dir, demo)
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 0, err
    (commit,) = hub.commits(REPO)
    assert set(hub.uploads.values()) == {"lfs"} and not hub.cas.files
    assert commit.added[f"{PREREG_ID}/{runs['scripted'].name}/{rd.VIDEOS}/rollout_seed000.mp4"] == _video(0)


def test_without_a_token_nothing_is_sent(demo, run_dir, hub, capsys, tmp_path, hf_env):
    runs = reported_runs(run_dir, demo)
    hf_env.delenv("HF_TOKEN")
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 2 and "no Hugging Face token" in err and "HF_TOKEN" in err
    assert hub.requests == []


def test_a_file_holding_the_token_is_refused_before_anything_is_sent(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    status = runs["scripted"] / rd.STATUS
    status.write_text(json.dumps({"state": "done", "note": f"HF_TOKEN={TOKEN}"}))
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 2 and "contains the Hugging Face token" in err and str(status) in err
    assert hub.requests == [] and TOKEN not in out + err


def test_only_reported_finished_runs_of_a_valid_repo_id_are_published(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    code, _, err = run_cli(capsys, demo, "--repo", "not a repo", *run_args(runs))
    assert code == 2 and "OWNER/NAME" in err
    (runs["tiny-masked"] / rd.RESULTS_JSON).unlink()
    code, _, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 2 and "not reported" in err and "fontaine-prereg report" in err
    with (runs["scripted"] / rd.ROWS).open("a") as f:  # a row after the report: the report is stale
        f.write(json.dumps(make_row(6)) + "\n")
    code, _, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={runs['scripted']}")
    assert code == 2 and "changed after the report" in err
    (runs["tiny-reference"] / rd.STATUS).write_text(json.dumps({"state": "running"}))
    code, _, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"tiny-reference={runs['tiny-reference']}")
    assert code == 2 and "still running" in err
    assert hub.requests == []


@pytest.mark.parametrize("name, content, said", [
    (rd.RESULTS_JSON, b'{"prereg_id": ', "results.json: cannot be read (not JSON"),
    (rd.RESULTS_JSON, b"[1, 2]", "results.json: cannot be read (not a JSON object)"),
    (rd.RESULTS, b"# results\n\xff\xfe broken\n", "results.md: cannot be read ("),
])
def test_a_damaged_report_is_one_line_and_nothing_is_sent(demo, run_dir, hub, capsys, tmp_path, name, content, said):
    runs = reported_runs(run_dir, demo)
    (runs["scripted"] / name).write_bytes(content)
    code, _, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={runs['scripted']}")
    assert code == 2 and said in err and "run `fontaine-prereg report` again" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert hub.requests == []


HOOK = "https://discord.com/api/webhooks/123456789012345678/Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7B"


@pytest.mark.parametrize("secret, kind", [(HOOK, "a Discord webhook URL"),
                                          ("hf_" + "Z" * 34, "a Hugging Face token"),
                                          ("WANDB_API_KEY=0123456789abcdef", "a secret value")])
def test_a_row_holding_any_secret_is_refused_before_anything_is_sent(demo, run_dir, hub, capsys, secret, kind):
    """Issue 33: a webhook URL in a row field was uploaded (only the HF token in the same place was refused)."""
    runs = reported_runs(run_dir, demo)
    rows = runs["scripted"] / rd.ROWS
    lines = rows.read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "note": f"see {secret}"})
    rows.write_text("\n".join(lines) + "\n")
    os.utime(runs["scripted"] / rd.RESULTS_JSON)  # the rows are older than the report: only the secret is wrong
    os.utime(rows, (1, 1))
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 2 and f"contains {kind}" in err and str(rows) in err, err
    assert hub.requests == [] and secret not in out + err


def test_an_absolute_path_in_repo_is_refused(demo, run_dir, capsys, hf_env):
    runs = reported_runs(run_dir, demo)
    code, out, err = run_cli(capsys, demo, "--repo", REPO, "--path-in-repo", "/abs/evals", "--dry-run", *run_args(runs))
    assert code == 2 and "--path-in-repo '/abs/evals': a folder in the repo, not an absolute path" in err, err


@pytest.mark.parametrize("secret", ["HTTPS://DISCORD.COM/api/webhooks/1/abc", "discord.com/api/webhooks/1/abc",
                                    "canary.discordapp.com/api/webhooks/1/abc"])
def test_a_status_holding_a_webhook_in_any_case_or_without_scheme_is_never_uploaded(demo, run_dir, hub, capsys, secret):
    """Issue 43: publish uploaded a status.json whose reason held `HTTPS://DISCORD.COM/...` (its check knew
    only a lower-case `https://` webhook); it asks the one recogniser, prereg.core.untrusted.secret_in."""
    runs = reported_runs(run_dir, demo)
    status = runs["scripted"] / rd.STATUS
    status.write_text(json.dumps({**json.loads(status.read_text()), "reason": f"stopped: {secret}"}))
    os.utime(status, (1, 1))
    code, out, err = run_cli(capsys, demo, "--repo", REPO, *run_args(runs))
    assert code == 2 and "contains a Discord webhook URL" in err and str(status) in err, err
    assert hub.requests == [] and "webhooks/1/abc" not in (out + err).lower()


def test_a_run_directory_that_is_a_fifo_is_named_as_one(demo, hub, capsys, tmp_path):
    """Issue 43: a FIFO given as the run read 'no such run directory'."""
    fifo = tmp_path / "run"
    os.mkfifo(fifo)
    code, _, err = run_cli(capsys, demo, "--repo", REPO, "--run", f"scripted={fifo}")
    assert code == 2 and f"{fifo}: is a FIFO (named pipe), not a directory; not a run directory" in err, err
    assert hub.requests == [] and len(err.strip().splitlines()) == 1


def test_a_crossed_runs_picked_seeds_go_up_with_their_episode_on_every_variant(demo, run_dir, hf_env):
    """Issue 48: the seeds are picked on the counted variant's rows (base: seeds 1 and 4 succeed; on `dim`
    every seed does, which picks nothing), and each picked seed's `dim` episode goes up beside it,
    keyed 'seed@variant' and said 'seed 1 on dim' (Discord's link words)."""
    from prereg.rundir.files import video_relpath
    from tests.prereg.conftest import launched_manifest

    launched = launched_manifest(demo, "scripted")
    config = {**launched.get("config", {}), "variants": ["dim"], "read_variant": "base"}
    rows = [make_row(s, success=s in {1, 4}, variant=None, video=video_relpath(s)) for s in range(6)]
    rows += [make_row(s, success=True, variant="dim", video=video_relpath(s, variant="dim")) for s in range(6)]
    d = run_dir("crossed", rows, status={"state": "done"}, launched=(demo, "scripted"), manifest={"config": config})
    (d / rd.VIDEOS).mkdir()
    for r in rows:
        (d / r["video"]).write_bytes(_video(r["seed"]))
    build_report(demo, {"scripted": d}, now=NOW)
    plan = pub.plan_publish(demo, {"scripted": d}, repo_id=REPO)
    (run,) = plan.runs
    assert sorted(run.videos) == ["1", "1@dim", "4", "4@dim"]
    assert run.videos["4@dim"].endswith(video_relpath(4, variant="dim")) and run.videos["4"].endswith(video_relpath(4))
    assert pub.video_words("1@dim") == "seed 1 on dim" and pub.video_words("steady:2@dim") == "steady, seed 2 on dim"
