"""`fontaine-prereg publish --space`: the report's pages on a static Hugging Face Space, against the loopback
fake hub (tests/fake_hub.py): one commit of the pages and every file they link (laid out so the links
hold: the Space's tree, written to disk, passes the same link check), an index of the registrations on
the Space and a README that makes it static; the page's URL recorded beside the dataset's record; the
Discord results post links the page; publishing again sends nothing; a page linking outside the runs'
folder is refused before anything is sent."""

from __future__ import annotations

import json
import urllib.request

import pytest

from prereg import rundir as rd
from prereg.outputs import publish as pub
from prereg.outputs.page import PAGE, linked_files
from tests.prereg.conftest import HF_TOKEN as TOKEN
from tests.prereg.test_publish import (
    PREREG_ID,
    REPO,
    no_token_anywhere,
    reported_runs,
    run_args,
    run_cli,
)

SPACE = "my-lab/reports"


def test_the_pages_and_what_they_link_go_to_a_static_space_in_one_commit(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    folder = tmp_path / "runs"
    reg_page = folder / f"{PREREG_ID}.results.html"
    code, out, err = run_cli(capsys, demo, "--space", SPACE, *run_args(runs))
    assert code == 0, err
    (commit,) = hub.commits(SPACE, "space")
    assert hub.spaces[SPACE].sdk == "static"
    linked = set()
    for page in [reg_page, *(d / PAGE for d in runs.values())]:
        found, problems = linked_files(page, folder)
        assert problems == []
        linked |= {f"{PREREG_ID}/{f.relative_to(folder).as_posix()}" for f in found}
    assert set(commit.added) == linked | {"index.html", "README.md"}
    assert sum(k.endswith(".mp4") for k in commit.added) == 18  # every filmed seed a page opens: 6 a run
    assert b"sdk: static" in commit.added["README.md"]
    index = commit.added["index.html"].decode()
    assert f'href="{PREREG_ID}/{PREREG_ID}.results.html"' in index
    for path, data in commit.added.items():
        assert str(tmp_path).encode() not in data, path  # no local absolute path in anything published
        if path.endswith(".html") and path not in ("index.html",):
            assert data == (folder / path.removeprefix(f"{PREREG_ID}/")).read_bytes()  # the pages as written
    # the Space's tree, laid out on a disk, keeps every link the pages have
    space = tmp_path / "space"
    for path, data in commit.tree.items():
        (space / path).parent.mkdir(parents=True, exist_ok=True)
        (space / path).write_bytes(data)
    for page in (space / PREREG_ID).rglob("*.html"):
        assert linked_files(page, space)[1] == []
    assert linked_files(space / "index.html", space)[1] == []
    # recorded: the page's URL (here the file at the commit; on the public hub the Space's static host)
    for d in runs.values():
        res = json.loads((d / rd.RESULTS_JSON).read_text())
        s = res[pub.SPACE_KEY]
        assert s["commit"] == commit.oid and s["repo"] == SPACE and s["repo_type"] == "space"
        assert s["page_url"] == f"{hub.endpoint}/spaces/{SPACE}/resolve/{commit.oid}/{PREREG_ID}/{d.name}/{PAGE}"
        assert s["registration_url"].endswith(f"/{PREREG_ID}/{PREREG_ID}.results.html")
        assert s["space_url"] == f"{hub.endpoint}/spaces/{SPACE}"
        req = urllib.request.Request(s["page_url"], headers={"authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.read() == (d / PAGE).read_bytes()
        md = (d / rd.RESULTS).read_text()
        assert md.count(pub.PAGE_LINE) == 1 and s["page_url"] in md
    assert f"{runs['scripted'].name}/{PAGE}" in out and "the registration:" in out
    no_token_anywhere(tmp_path, out, err)


def test_the_dataset_and_the_space_together_and_the_post_links_the_page(demo, run_dir, hub, capsys, tmp_path):
    from console.notify.messages import results_post
    from console.notify.snapshot import read_snapshot

    runs = reported_runs(run_dir, demo)
    scripted = runs["scripted"]
    code, out, err = run_cli(capsys, demo, "--repo", REPO, "--space", SPACE, "--run", f"scripted={scripted}")
    assert code == 0, err
    assert len(hub.commits(REPO)) == 1 and len(hub.commits(SPACE, "space")) == 1
    res = json.loads((scripted / rd.RESULTS_JSON).read_text())
    assert set(res) >= {pub.PUBLISHED_KEY, pub.SPACE_KEY}  # each record kept beside the other
    md = (scripted / rd.RESULTS).read_text().splitlines()
    assert [x for x in md if x.startswith((pub.PUBLISHED_LINE, pub.PAGE_LINE))] == md[-2:]
    text = results_post(read_snapshot(scripted)).description
    page = res[pub.SPACE_KEY]["page_url"]
    assert f"]({page})" in text and f"]({res[pub.PUBLISHED_KEY]['folder_url']})" in text
    assert text.index(page) < text.index(res[pub.PUBLISHED_KEY]["folder_url"])  # the page first
    # the Space's copies of the report files carry no record (as the report wrote them)
    (commit,) = hub.commits(SPACE, "space")
    sent = commit.added[f"{PREREG_ID}/{scripted.name}/{rd.RESULTS_JSON}"]
    assert b'"published' not in sent


def test_publishing_the_space_again_sends_nothing_and_keeps_the_record(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    assert run_cli(capsys, demo, "--space", SPACE, *run_args(runs))[0] == 0
    before = {d: (d / rd.RESULTS_JSON).read_bytes() for d in runs.values()}
    code, out, err = run_cli(capsys, demo, "--space", SPACE, *run_args(runs))
    assert code == 0, err
    assert len(hub.commits(SPACE, "space")) == 1 and "nothing sent" in out
    assert {d: (d / rd.RESULTS_JSON).read_bytes() for d in runs.values()} == before


def test_a_second_registration_joins_the_index(demo, discrete, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    assert run_cli(capsys, demo, "--space", SPACE, *run_args(runs))[0] == 0
    assert run_cli(capsys, demo, "--space", SPACE, "--path-in-repo", "again/demo", *run_args(runs))[0] == 0
    first, second = hub.commits(SPACE, "space")
    index = second.tree["index.html"].decode()
    assert f'href="{PREREG_ID}/{PREREG_ID}.results.html"' in index and f'href="again/demo/{PREREG_ID}.results.html"' in index
    assert "README.md" not in second.added  # the Space's README is never replaced


def test_a_page_linking_outside_the_runs_folder_is_refused_before_anything_is_sent(demo, run_dir, hub, capsys,
                                                                                    tmp_path):
    runs = reported_runs(run_dir, demo)
    page = runs["scripted"] / PAGE
    (tmp_path / "elsewhere.mp4").write_bytes(b"\0video")
    page.write_text(page.read_text().replace("</main>", '<a href="../../elsewhere.mp4">x</a></main>'))
    code, out, err = run_cli(capsys, demo, "--space", SPACE, *run_args(runs))
    assert code == 2 and "outside" in err and "elsewhere.mp4" in err
    assert hub.requests == []


@pytest.mark.parametrize("repo, host", [("my-lab/fontaine-reports", "my-lab-fontaine-reports.static.hf.space"),
                                        ("Lab_Two/Reports.v2", "lab-two-reports-v2.static.hf.space")])
def test_the_public_hub_serves_a_static_space_from_its_own_host(repo, host):
    p = pub.Published(repo, "main", "c" * 40, "", pub.PUBLIC_HUB, "now", pub.SPACE, 1, 1)
    assert pub.static_host(repo) == host
    assert p.page_url("demo/run/results.html") == f"https://{host}/demo/run/results.html"


def test_dry_run_lists_the_pages_and_their_files_and_sends_nothing(demo, run_dir, hub, capsys, tmp_path):
    runs = reported_runs(run_dir, demo)
    code, out, err = run_cli(capsys, demo, "--space", SPACE, *run_args(runs), "--dry-run")
    assert code == 0, err
    assert f"{hub.endpoint}/spaces/{SPACE} @ main" in out and "index.html (every registration on it)" in out
    assert f"{PREREG_ID}/{PREREG_ID}.results.html  (the registration's page)" in out
    assert f"{PREREG_ID}/{runs['scripted'].name}/{PAGE}  (a run's page)" in out
    assert "nothing uploaded" in out and hub.requests == []
