"""Which posts a run directory is owed, and what they say: pure, no network."""

from __future__ import annotations

import json
import os
import time

import pytest

from console.notify.messages import due_posts, launch_post
from console.notify.snapshot import read_snapshot
from console.notify.wording import DESCRIPTION_MAX, Post, no_local_paths, seed_span, shorten_markdown
from prereg.rundir.status import GateSpec
from prereg.rundir.stop import StopReason
from tests.console.fake_discord import HandMadeRun


def owed(run, posted=(), *, now=None, **kw):
    return due_posts(read_snapshot(run.dir, now=now), set(posted), **kw)


def keys(posts):
    return [p.key for p in posts]


def age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_live_run_is_owed_its_launch_then_the_latest_update_with_an_explicit_catch_up(tmp_path):
    run = HandMadeRun(tmp_path, total=100, state="starting")
    assert keys(owed(run)) == []  # starting: the launch waits until the policy is loaded and the run runs
    run.status("running")
    assert keys(owed(run)) == ["launch"]
    run.episodes(9)
    assert keys(owed(run, ["launch"])) == []
    run.episodes(34)
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["update:30"]
    text = posts[0].description
    assert "**caught up**: 1 earlier update(s) not posted" in text
    assert "at 20/100: successes 4 · knock-aways 5 · engaged 10" in text  # the figures as they stood at 20
    assert posts[0].covers == ("update:20",)  # the ledger records update:20 as posted by this one
    assert keys(owed(run, ["launch", "update:30"])) == []
    assert keys(owed(run, ["launch", "update:30"], every_episodes=5)) == []  # 30 is still the latest
    run.episodes(36)
    assert keys(owed(run, ["launch", "update:30"], every_episodes=5)) == ["update:35"]


def test_the_last_milestone_is_left_to_the_end_posts(tmp_path):
    run = HandMadeRun(tmp_path, total=20).episodes(20, state="stopping")
    assert keys(owed(run, ["launch", "update:10"])) == []


def test_a_finished_run_gets_its_end_posts_and_no_updates(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(45, state="done")
    assert keys(owed(run, ["launch", "update:10"])) == ["done"]
    done = owed(run, ["launch"])[0]
    assert "frozen reads not written yet" in done.description and "**45/100**" in done.description
    run.results()
    assert keys(owed(run, ["launch", "done"])) == ["results"]
    assert keys(owed(run, ["launch"])) == ["results"]  # reads already there: no separate done post


def test_runs_that_ended_long_ago_and_were_never_posted_stay_quiet(tmp_path):
    run = HandMadeRun(tmp_path, total=10).episodes(10, state="done").results()
    assert keys(owed(run)) == ["results"]  # ended just now: the owner wants it
    age(run.dir / "status.json", 7 * 3600)
    assert owed(run) == []  # last week's runs do not flood the channel
    assert keys(owed(run, ["launch"])) == ["results"]  # but a run we followed is caught up


def test_a_stop_by_a_tripwire_posts_the_tripwire_then_the_stop(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(12)
    run.status("stopped", stop=StopReason("gate", "projected wall 3.10 h > limit 2.5 h after 12/100 episodes", gate="pace"))
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["tripwire:pace", "stopped:12"]
    assert "projected wall 3.10 h" in posts[0].description
    assert "reason: gate pace: projected wall 3.10 h" in posts[1].description
    run.status("stopped", stop=StopReason("user", "stop key in the console", who="alice"))
    assert keys(owed(run, ["launch"])) == ["stopped:12"]


def test_a_gate_that_trips_live_is_posted_once(tmp_path):
    run = HandMadeRun(tmp_path, total=100, gates={"gpu_hours_gate": 0.05}).episodes(20)  # 0.08 GPU-h spent
    posts = owed(run, ["launch", "update:20"])
    assert keys(posts) == ["tripwire:gpu_hours"]
    assert "GPU-hours 0.080 of 0.05" in posts[0].description
    assert keys(owed(run, ["launch", "update:20", "tripwire:gpu_hours"])) == []


def test_a_stale_heartbeat_is_a_stall_posted_once_per_episode_count(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(12)
    assert keys(owed(run, ["launch", "update:10"])) == []
    age(run.dir / "heartbeat", 600)  # median episode wall 30 s: the stall limit is 120 s
    posts = owed(run, ["launch", "update:10"])
    assert keys(posts) == ["stall:12"] and "heartbeat 600 s old" in posts[0].description
    assert keys(owed(run, ["launch", "update:10", "stall:12"])) == []


def test_a_failed_run_says_why(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(3)
    run.status("failed", reason="worker 1 crashed: MuJoCo model failed to load")
    posts = owed(run, ["launch"])
    assert keys(posts) == ["failed:3"]
    assert "MuJoCo model failed to load" in posts[0].description


def test_updates_show_validity_problems(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(10)
    with open(run.dir / "rows.jsonl", "a") as f:
        f.write(json.dumps({"seed": 10, "status": "error", "error": "boom", "reset_strikes": 2}) + "\n")
    text = owed(run, ["launch"])[0].description
    assert "reset strikes **2** (must be 0)" in text and "error rows **1**" in text


def test_long_results_are_shortened_to_fit_and_every_post_stays_within_discords_limits(tmp_path):
    long = "# Results\n\n" + "\n".join(f"| seed {i} | {'x' * 80} |" for i in range(200))
    run = HandMadeRun(tmp_path, total=100, gates={}).episodes(100, state="done").results(long)
    posts = owed(run, ["launch"])
    assert keys(posts) == ["results"]
    text = posts[0].description
    assert len(text) <= DESCRIPTION_MAX and text.endswith("(shortened: the full reads are in the run's report)")
    assert "**Results**" in text and "seed 0 · " in text and "|" not in text
    for p in posts:
        assert_fits_discord(p)


def test_markdown_tables_and_headings_read_as_lines():
    md = "## Reads\n\n| read | value |\n|:---|---:|\n| successes | 9/100 |\n"
    assert shorten_markdown(md, 500) == "**Reads**\n\nread · value\nsuccesses · 9/100"


def test_names_from_files_cannot_inject_mentions_or_markdown(tmp_path):
    run = HandMadeRun(tmp_path, run_id="run_*bold*", total=10)
    p = owed(run)[0]
    assert "`run_*bold*`" in p.content  # in a code span
    assert_fits_discord(p)


def test_gates_read_from_the_manifest_accept_the_driver_flag_names():
    spec = GateSpec.from_dict({"gpu_hours_gate": 1.5, "pace_limit_hours": 2.5, "pace_after_episodes": 10, "other": 1})
    assert (spec.gpu_hours, spec.pace_limit_hours, spec.pace_after_episodes) == (1.5, 2.5, 10)
    assert GateSpec.from_dict(None).gpu_hours is None


def test_seed_spans():
    assert seed_span(list(range(100))) == "0–99"
    assert seed_span([42, 47, 55]) == "42, 47, 55"
    assert seed_span(list(range(0, 40, 2))).endswith(", …")


def test_previews_lead_with_the_arm_and_k_of_n_and_the_run_id_comes_last(tmp_path):
    run = HandMadeRun(tmp_path, total=100).episodes(20)
    launch, update = owed(run)
    assert update.content.startswith("A 20/100 · 4 successes")
    assert launch.content.startswith("A 20/100 · launched · molmoact2 flow")
    assert update.content.endswith("`flow-a-20261130-080000`")


def test_no_absolute_local_path_reaches_a_post(tmp_path):
    run = HandMadeRun(tmp_path, total=10).episodes(3)
    run.status("failed", reason=f"could not read {tmp_path}/ckpt/model.safetensors; see ~/logs/x.log")
    run.results(f"## Results\n\nrows: {run.dir}/rows.jsonl\nhttps://example.org/a/b stays\n")
    posts = owed(run, ["launch"])
    assert keys(posts) == ["failed:3", "results"]
    for p in posts:
        for text in (p.content, p.title, p.description, p.footer):
            assert str(tmp_path) not in text and "~/logs" not in text
    assert "…/model.safetensors" in posts[0].description and "…/rows.jsonl" in posts[1].description
    assert "https://example.org/a/b" in posts[1].description
    assert no_local_paths("10/25 · 1/2 of /x") == "10/25 · 1/2 of /x"


def _driver_manifest(tmp_path, *policy_args) -> dict:
    """Run the real driver (fontaine-eval's main, in this process: a launch of the tiny MolmoAct2 paid ~10 s of
    imports that a test process holding them need not) for one 1 s episode; the run directory it wrote."""
    from tests.helpers import run_eval_here

    run_dir = tmp_path / "run"
    out = run_eval_here(*policy_args, "--seed", "0", "--num-seeds", "1", "--episode-seconds", "1", "--video-draw", "none",
                        "--run-dir", str(run_dir), env={"MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return run_dir


def test_the_launch_post_reads_the_manifest_the_real_driver_writes(tmp_path):
    run_dir = _driver_manifest(tmp_path, "--policy", "scripted")
    p = launch_post(read_snapshot(run_dir))
    d = p.description
    assert "policy **scripted**" in d and "{" not in d and "None" not in d  # no raw Python
    # the oracle loads no model: no dtype, convmap, decode or checkpoint (the flags' defaults are in its manifest)
    assert "dtype" not in d and "convmap" not in d and "decode" not in d and "checkpoint" not in d
    assert "1 seed (0)" in d and "1 s episodes" in d and "1 worker" in d and "budget: 1 episode " in d
    # a flag launch registers no gate, but the stall check runs: the post says so, not 'gates: none'
    assert "gates: none registered (no GPU-hour or pace limit)" in d
    assert "checked: a stall is posted when the heartbeat is older than 4 × the median episode (at least 60 s)" in d
    assert "or 15 min while starting" in d
    assert p.content.startswith("scripted ")
    assert p.content.count("scripted") == 1  # the arm is named 'scripted' too: said once


def _scripted_manifest(**policy) -> dict:
    return {"run_id": "r1", "arm": "scripted", "seeds": [0, 1, 2], "episode_seconds": 20.0, "workers": 2,
            "policy": {"kind": "scripted", "checkpoint": None, "revision": None, "decode": None, **policy},
            "policy_resolved": {"policy": "scripted", "served": "in each worker"}}


def test_a_registered_and_a_flag_launch_of_the_oracle_say_the_same_policy_facts(tmp_path):
    from prereg.rundir.files import write_json_atomic

    flags = _scripted_manifest(dtype="bf16", convmap="official", device="cpu")  # fontaine-eval --policy scripted
    registered = {**_scripted_manifest(dtype=None, convmap="official"),  # --prereg demo.md --arm scripted
                  "prereg": {"id": "demo", "sha256": "ab" * 32}}
    posts = []
    for name, manifest in (("flags", flags), ("registered", registered)):
        run = tmp_path / name
        run.mkdir()
        write_json_atomic(run / "manifest.json", manifest)
        write_json_atomic(run / "status.json", {"state": "running", "done": 0, "total": 3})
        posts.append(launch_post(read_snapshot(run)))
    lines = [[ln for ln in p.description.splitlines() if not ln.startswith("prereg ")] for p in posts]
    assert lines[0] == lines[1]  # the registered one adds only its prereg line
    assert "arm **scripted** · policy **scripted**" in lines[0]
    assert not any(w in posts[0].description for w in ("dtype", "convmap", "bf16", "official"))
    assert posts[0].content.startswith("scripted 0/3 · launched · `")


def test_a_model_launch_keeps_its_model_facts_and_names_the_policy_beside_a_differently_named_arm(tmp_path):
    run = HandMadeRun(tmp_path, total=10)
    p = owed(run)[0]
    assert "decode flow" in p.description and "convmap official" in p.description
    assert p.content.startswith("A 0/10 · launched · molmoact2 flow")


def test_gpu_hours_of_a_run_holding_no_gpu_say_so(tmp_path):
    from prereg.rundir.files import write_json_atomic

    run = HandMadeRun(tmp_path, total=100).episodes(10)
    status = json.loads((run.dir / "status.json").read_text())
    write_json_atomic(run.dir / "status.json", {**status, "gpu_hours": 0.0, "gpus": 0,
                                                "gpu_hours_source": "allocated (wall x 0 GPUs held)"})
    d = owed(run, ["launch"])[0].description
    assert "GPU-hours 0.00 of 1.5 gate (no GPU held)" in d and "0 GPUs" not in d
    write_json_atomic(run.dir / "status.json", {**status, "gpus": 1, "gpu_hours_source": "allocated (wall x 1 GPU held)"})
    assert "(allocated (wall x 1 GPU held))" in owed(run, ["launch"])[0].description


@pytest.mark.slow
def test_the_launch_post_of_a_tiny_molmoact2_run_shows_checkpoint_revision_and_decode(tmp_path):
    run_dir = _driver_manifest(tmp_path, "--molmoact2-discrete", "tiny")
    p = launch_post(read_snapshot(run_dir))
    d = p.description
    assert "policy **molmoact2-discrete**" in d
    assert "checkpoint `tiny`" in d and "revision" in d and "decode reference" in d
    assert "weights `" in d and "/root" not in d and "/home" not in d and ".cache" not in d
    assert "{" not in d and "None" not in d


def assert_fits_discord(p: Post) -> None:
    assert len(p.content) <= 2000 and len(p.title) <= 256 and len(p.description) <= 4096
    assert len(p.title) + len(p.description) + len(p.footer) <= 6000


def test_updates_say_when_the_decision_was_settled(tmp_path):
    from console.fixtures import make_run_dir
    from console.notify.messages import progress_lines
    from console.notify.snapshot import read_snapshot
    from prereg import rundir as rd
    from prereg.rundir.files import write_json_atomic

    settled = {"at": 63, "total": 100, "all": True,
               "rules": [{"condition": "successes >= 20", "settled": True, "verdict": "does not hold"}]}
    for name, gates in (("registered", {"decided": "stop"}), ("information", {})):
        d = make_run_dir(tmp_path, name, state="running", done=70, total=100, gates=gates)
        status = rd.read_json(d / rd.STATUS)
        write_json_atomic(d / rd.STATUS, {**status, "settled": settled})
        said = any("settled at 63/100" in line for line in progress_lines(read_snapshot(d)))
        # a curtailment the plan registered decides; one it did not is the driver's note, never a decision
        assert said == (name == "registered")


def test_a_registered_curtailment_is_read_and_described():
    from console.notify.wording import describe_gates

    spec = GateSpec.from_dict({"gpu_hours": 0.05, "decided": "stop"})
    assert spec.decided == "stop" and "stops once its decision rules are settled" in describe_gates(spec)


def test_the_results_post_states_the_reports_own_reads_and_verdicts(tmp_path):
    """The post reads results.json, which the report writes from the verdict engine: an INVALID arm's
    verdicts are undetermined there, and so in the post, whatever the rows' tally says."""
    import shutil

    from prereg.outputs.report import build_report
    from tests.prereg.conftest import EXAMPLES, launched_manifest, make_row

    doc = tmp_path / "curtailment.md"
    shutil.copy(EXAMPLES / "curtailment.md", doc)
    run = tmp_path / "runs" / "oracle"
    run.mkdir(parents=True)
    rows = [make_row(s, success=True) for s in range(6)] + [make_row(6, status="error", success=True)]
    (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "status.json").write_text(json.dumps({"state": "stopped", "done": 7, "total": 20}))
    (run / "manifest.json").write_text(json.dumps(launched_manifest(doc, "oracle")))
    build_report(doc, {"oracle": run}, append=False, now="2026-12-01T09:00:00Z")
    (post,) = [p for p in due_posts(read_snapshot(run), {"launch", "stopped"}) if p.key == "results"]
    # the report's story, its headline first and said once: state, validity, the plan's decisions
    head = post.description.splitlines()
    assert head[0] == r"**stopped · INVALID · undetermined: if successes \>= 5; undetermined: if successes == 0**"
    assert head[1] == "oracle: 6/7 successes (of 20 planned), 0 knock-aways, 0 engaged · INVALID"
    assert head[2].startswith("not VALID: error rows 1 (must be <= 0)")
    assert "results: 6/7 successes · undetermined: if successes" in post.content


def test_an_update_tallies_the_outcomes_read_from_the_grasp_fields(tmp_path):
    from console.notify.messages import progress_lines, update_post
    from prereg.rundir.rows import complete_row

    run = HandMadeRun(tmp_path, total=10)
    base = {"run_id": run.run_id, "arm": "A", "worker": 0, "success": False, "progress_cm": 4.0,
            "progress_final_cm": 1.0, "reset_strikes": 0, "predicts": 30, "zero_fallbacks": 0, "wall_s": 30.0,
            "status": "ok", "touched": True, "off_table": False, "grasped": False, "released": False}
    held = {"grasped": True, "grasp_tick": 40, "lift_max_mm": 30.0}
    rows = [
        {**held, "released": False, "carried_cm": 12.0},  # still held at the end: carried not placed
        {**held, "released": True, "carried_cm": 9.0, "tipped": False, "dist_final_cm": 11.0},  # carried, set down away
        {**held, "released": True, "carried_cm": 0.4, "tipped": False},  # grasped then dropped
        {"off_table": True, "progress_final_cm": -30.0, "boat_z_mm": -745.0},  # on the floor
        {"success": True},
        {"progress_final_cm": -3.0},  # knocked away, never grasped
    ]
    with open(run.dir / "rows.jsonl", "w") as f:
        for seed, extra in enumerate(rows):
            f.write(json.dumps(complete_row({**base, "seed": seed, **extra})) + "\n")
    run.done = len(rows)
    run.status("running")
    snap = read_snapshot(run.dir)
    tallies = [line for line in progress_lines(snap) if line.startswith("outcomes: ")]
    assert tallies == ["outcomes: success 1 · off the table 1 · carried not placed 2 · grasped then dropped 1"
                       " · knocked away 1"]
    assert tallies[0] in update_post(snap, 5).description


def test_the_results_post_says_each_arms_real_read_in_its_one_sentence(tmp_path):
    """A plan with a registered real read: the results post carries the story's real sentence (real k/n, the
    rectifier's verdict), after the sim read, the same words the report and the page use."""
    from prereg.document.read import load
    from prereg.document.real_spec import selected_seeds
    from prereg.document.seal import freeze
    from prereg.outputs.report import build_report
    from prereg.rundir.real import Prediction, append_prediction
    from prereg.stats.story import Story
    from tests.prereg.conftest import launched_manifest, make_row
    from tests.prereg.test_real_trials import PLAN, _record

    doc = tmp_path / "real.md"
    doc.write_text(PLAN)
    freeze(doc, now="2026-12-07T12:00:00Z", commit="0" * 40)
    run = tmp_path / "runs" / "oracle"
    run.mkdir(parents=True)
    (run / "rows.jsonl").write_text("".join(json.dumps(make_row(s, success=True)) + "\n" for s in range(40)))
    (run / "status.json").write_text(json.dumps({"state": "done", "done": 40, "total": 40}))
    (run / "manifest.json").write_text(json.dumps(launched_manifest(doc, "oracle")))
    for s in range(40):
        append_prediction(run, Prediction("oracle", s, 20, 20, 1.0))
    _record(run, doc, {s: "failure" for s in selected_seeds(load(doc), "oracle")})
    build_report(doc, {"oracle": run}, append=False, now="2026-12-08T12:00:00Z", unregistered=True)
    (post,) = [p for p in due_posts(read_snapshot(run), {"launch", "done"}) if p.key == "results"]
    story = Story.from_dict(json.loads((run / "results.json").read_text())["story"])
    (real,) = story.real
    line = next(x for x in post.description.splitlines() if x.startswith("real trials, oracle: "))
    assert "0/10" in line and "optimistic" in line and real.verdict == "optimistic"


def test_a_post_every_ten_real_trials_even_after_the_run_ended(tmp_path):
    """Real trials come after the sim run: a finished run whose real.jsonl grows is polled again (its
    signature includes real.jsonl) and owes one post per ten trials, the latest milestone only."""
    from console.notify.outbox import Outbox
    from prereg.rundir.real import Trial, append_trial

    run = HandMadeRun(tmp_path, total=5).episodes(5, state="done")
    box = Outbox()
    box.poll_run(run.dir)
    posted = {item.post.key for item in box.queue}
    assert posted and not any(k.startswith("real:") for k in posted)

    def trials(seeds, outcome="success"):
        for s in seeds:
            append_trial(run.dir, Trial.make(arm="A", seed=s, checkpoint_sha256="c" * 64, operator="ana",
                                             started_at="2026-12-08T10:00:00Z", ended_at="2026-12-08T10:01:00Z",
                                             outcome=outcome, void_reason="rig fault" if outcome == "void" else None))

    trials(range(9))
    assert box.poll_run(run.dir) == []  # nine: nothing yet
    trials([9], "void")
    assert box.poll_run(run.dir) == ["real:10"]
    post = next(i.post for i in box.queue if i.post.key == "real:10")
    assert "A: 10 trials · 9 success · 1 void" in post.description and "10 real trials recorded" in post.content
    trials(range(10, 31), "failure")  # 31: the 20 milestone was missed, only the latest is owed
    assert box.poll_run(run.dir) == ["real:30"]
    assert box.poll_run(run.dir) == []
