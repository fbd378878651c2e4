"""The engine runs a plan's crossed design (issue 48): every seed on `base` and on each registered
variant, an episode being (arm?, variant, seed). A real run of the scripted oracle on an env file with a
lighting and a camera variant: one row per (variant, seed) naming its variant, the variants resolved and
hashed into the manifest, the counts and the summary the read variant's, a filmed seed's video per
variant; SIGKILLed mid-run, a resume runs the missing episodes only. An unknown variant, or a crossed
design on Ray, is one line at launch (exit 2) and nothing is written."""

from __future__ import annotations

import json
import os
import signal

import pytest

from engine.cli.main import main
from engine.envs import env_sha256
from engine.envs.envfile import read_declaration
from engine.record.config import RunConfig
from prereg.document.seal import freeze
from prereg.rundir.files import video_relpath
from tests.engine.env_file_fixture import ENV, write_env
from tests.helpers import REPO, launch_detached, read_rows, read_status, run_eval, wait_until

VARIANTS = """variants:
  dim-light:
    lighting: {direction: [0.3, 0.0, -1.0], intensity: 0.35}
  camera-left:
    camera_offsets: {front: [0.0, 0.02, 0.0]}
"""
NAMES = ("dim-light", "camera-left")
READ = "dim-light"  # the variant the plan reads (not base: the counts must follow it)
SEEDS = (0, 1, 2)

PLAN = """---
fontaine: fontaine-prereg/1
id: crossed-test
title: "the oracle over registered variants"
created: 2026-12-01
arms:
  - name: oracle
    policy: scripted
protocol:
  seeds: 0-2
  episode_seconds: 3
  workers: 2
  video_draw: "seeds:0"
  env: lab/env.yaml
  env_sha256: {digest}
  variants: [{names}]
  read_variant: {read}
reads:
  primary: successes
gates:
  gpu_hours: 0.1
decision_rules:
  - if: successes >= 1
    then: the oracle places the block under the read variant
---

# A crossed design

Plain words.
"""


def crossed_plan(tmp_path, names=NAMES, read=READ):
    """A frozen plan of the oracle on the lab env file, every seed also run on the variants `names`."""
    lab = write_env(tmp_path / "lab", ENV + VARIANTS)
    doc = tmp_path / "plan.md"
    doc.write_text(PLAN.format(digest=env_sha256(str(lab)), names=", ".join(names), read=read))
    freeze(doc)
    return doc, lab


def test_jobs_go_out_seed_by_seed_base_then_each_variant_the_arms_interleaved():
    arms = [{"arm": "A", "policy": {"kind": "scripted"}}, {"arm": "B", "policy": {"kind": "scripted"}}]
    from engine.policies.factory import PolicySpec

    cfg = RunConfig(run_id="r", arm="A-vs-B", policy=PolicySpec(), seeds=[4, 2], arms=arms, variants=["v1", "v2"])
    assert cfg.jobs()[:6] == [("A", "base", 4), ("B", "base", 4), ("A", "v1", 4), ("B", "v1", 4),
                              ("A", "v2", 4), ("B", "v2", 4)]
    assert len(cfg.jobs()) == 2 * 2 * 3 == len(cfg.seeds) * cfg.episodes_per_seed()
    assert cfg.job_fields(("B", "base", 2)) == ("B", None, 2) and cfg.job_fields(["A", "v2", 4]) == ("A", "v2", 4)
    assert cfg.job_of({"arm": "B", "variant": None, "seed": 2}) == ("B", "base", 2)
    one = RunConfig(run_id="r", arm="a", policy=PolicySpec(), seeds=[0, 1], variants=["v1"])
    assert one.jobs() == [("base", 0), ("v1", 0), ("base", 1), ("v1", 1)]
    plain = RunConfig(run_id="r", arm="a", policy=PolicySpec(), seeds=[0, 1])  # no variants: today's jobs, unchanged
    assert plain.jobs() == [0, 1] and plain.job_of({"seed": 1, "variant": None}) == 1
    assert plain.job_fields(1) == (None, None, 1) and plain.episodes_per_seed() == 1


def test_a_worker_builds_each_variants_scene_once_and_keeps_it(tmp_path):
    from engine.policies.factory import PolicySpec
    from engine.sim import variants as sim_variants
    from engine.workers.worker import _VariantScenes

    lab = write_env(tmp_path / "lab", ENV + VARIANTS)
    cfg = RunConfig(run_id="r", arm="a", policy=PolicySpec(), seeds=[0], env=str(lab), render_size=16,
                    variants=list(NAMES))
    base = object()
    scenes = _VariantScenes(cfg, base)
    compiles = sim_variants.COMPILES["count"]
    dim = scenes.get("dim-light")
    assert scenes.get("dim-light") is dim and scenes.get(None) is base  # kept: every later episode reuses it
    assert sim_variants.COMPILES["count"] - compiles == 1
    with pytest.raises(ValueError, match=r"variant 'foggy' is not one of this run's \(dim-light, camera-left\)"):
        scenes.get("foggy")


def test_the_registered_comparison_reads_the_read_variants_rows_only():
    from engine.policies.factory import PolicySpec
    from engine.record.config import comparison_record
    from engine.run.decisions import PlanDecisions
    from prereg.document.comparison_spec import ComparisonSpec

    spec = ComparisonSpec("A", "B", "success", "sprt", minimum_effect=0.6, assumed_rates=(0.2, 0.8), max_seeds=12)
    arms = [{"arm": a, "policy": PolicySpec().as_dict()} for a in ("A", "B")]
    seeds = list(range(12))

    def rows(variant, a_ok, b_ok):
        return [{"arm": arm, "seed": s, "variant": variant, "status": "ok", "success": ok}
                for s in seeds for arm, ok in (("A", a_ok), ("B", b_ok))]

    both = rows(None, False, True) + rows("v1", True, True)  # B better on base; A and B alike on v1
    outcomes = {}
    for read in ("base", "v1"):
        cfg = RunConfig(run_id="r", arm="A-vs-B", policy=PolicySpec(), seeds=seeds, arms=arms,
                        comparison=comparison_record(spec), variants=["v1"], read_variant=read)
        decisions = PlanDecisions(cfg, REPO, log=lambda _m: None)
        decisions.comparison_after(both, remaining=0)
        outcomes[read] = (decisions.comparison["outcome"], decisions.comparison["at"])
    assert outcomes == {"base": ("B better", 6), "v1": ("undecided", 12)}


def pooled_rows(won: dict, seeds, arm=None) -> list[dict]:
    """A crossed run's rows: won {variant (None: base): the seeds it solved}."""
    return [{**({"arm": arm} if arm else {}), "seed": s, "variant": v, "status": "ok", "success": s in w}
            for v, w in won.items() for s in seeds]


def test_a_pooled_plans_decisions_in_the_driver_read_each_seeds_share_of_the_pooled_variants(tmp_path):
    """read_variant: pooled (issue 48): the driver's sequential test and comparison read the pooled rate
    (prereg.stats.variants_decide), the decision rules and counts base's rows, and the episodes the decision
    awaits are the pooled variants' (a camera variant apart unless pooled)."""
    from engine.policies.factory import PolicySpec
    from engine.record.config import comparison_record
    from engine.run.decisions import PlanDecisions
    from prereg.document.comparison_spec import ComparisonSpec
    from prereg.rundir.status import GateSpec

    seeds = list(range(30))
    common = dict(policy=PolicySpec(), seeds=seeds, variants=["dim", "cam"], camera_variants=["cam"],
                  prereg={"path": str(tmp_path / "no-rules.md")})
    sprt = {"p0": 0.3, "p1": 0.6, "alpha": 0.05, "beta": 0.1}

    def sequential(read, won):
        cfg = RunConfig(run_id="r", arm="A", gates=GateSpec(sequential=sprt), read_variant=read, **common)
        d = PlanDecisions(cfg, tmp_path, log=lambda _m: None)
        d.after_row(pooled_rows(won, seeds), stopping=False, remaining=0)
        return d.sequential

    base_fails = {None: set(), "dim": set(seeds), "cam": set(seeds)}
    assert sequential("base", base_fails)["decision"] == "H0"  # base alone: nothing solved
    pooled = sequential("pooled", {None: set(seeds), "dim": set(seeds), "cam": set()})
    assert pooled["decision"] == "H1" and pooled["read"] == "pooled" and "pooled rate" in pooled["text"]
    assert sequential("pooled", {None: set(), "dim": set(), "cam": set(seeds)})["decision"] == "H0"  # cam apart

    cfg = RunConfig(run_id="r", arm="A", read_variant="pooled", **common)
    assert cfg.counted_variant == "base" and cfg.decision_variants() == ("base", "dim")
    assert RunConfig(run_id="r", arm="A", read_variant="pooled", pool_cameras=True,
                     **common).decision_variants() == ("base", "dim", "cam")
    assert RunConfig(run_id="r", arm="A", read_variant="dim", **common).decision_variants() == ("dim",)

    spec = ComparisonSpec("A", "B", "success", "savi", alpha=0.05, minimum_effect=0.15, max_seeds=30)
    arms = [{"arm": a, "policy": PolicySpec().as_dict()} for a in ("A", "B")]
    cmp_cfg = RunConfig(run_id="r", arm="A-vs-B", arms=arms, comparison=comparison_record(spec),
                        read_variant="pooled", **{**common, "prereg": None})
    d = PlanDecisions(cmp_cfg, tmp_path, log=lambda _m: None)
    rows = (pooled_rows({None: set(range(0, 30, 4)), "dim": set(), "cam": set(seeds)}, seeds, "A")
            + pooled_rows({None: set(seeds), "dim": set(seeds), "cam": set()}, seeds, "B"))
    stop = d.after_row(rows, stopping=False, remaining=5)
    assert d.comparison["outcome"] == "B better" and d.comparison["read"] == "pooled"
    assert stop is not None and "on the pooled rate" in stop.detail


@pytest.mark.slow
def test_a_crossed_run_killed_mid_run_resumes_the_missing_episodes_only(tmp_path):
    doc, lab = crossed_plan(tmp_path)
    run_dir = tmp_path / "runs" / "crossed"
    proc = launch_detached(run_dir, "--prereg", str(doc), "--arm", "oracle")
    try:
        wait_until(lambda: len(read_rows(run_dir)) >= 2 or proc.poll() is not None, timeout=120, interval=0.02,
                   what="two rows of the crossed run")
        proc.send_signal(signal.SIGKILL)  # the driver alone: its workers die with it
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    before = read_rows(run_dir)
    every = {(v, s) for s in SEEDS for v in ("base", *NAMES)}
    assert 2 <= len(before) < len(every), (before, (run_dir / "driver.log").read_text()[-2000:])

    out = run_eval("--resume", str(run_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    rows = read_rows(run_dir)
    assert rows[:len(before)] == before  # the rows before the kill, untouched
    resumed = [(r["variant"] or "base", r["seed"]) for r in rows[len(before):]]
    assert sorted(resumed) == sorted(every - {(r["variant"] or "base", r["seed"]) for r in before})  # the missing, once
    assert sorted((r["variant"] or "base", r["seed"]) for r in rows) == sorted(every)  # one row per (variant, seed)
    assert all(r["status"] == "ok" for r in rows) and {r["variant"] for r in rows} == {None, *NAMES}

    manifest = json.loads((run_dir / "manifest.json").read_text())
    config = manifest["config"]
    declared = {v.name: v for v in read_declaration(lab).variants}
    assert config["variants"] == list(NAMES) and config["read_variant"] == READ
    assert config["camera_variants"] == ["camera-left"]  # the camera offset, read apart
    assert config["variant_sha256"] == {n: declared[n].sha256() for n in NAMES}
    assert config["workers"] == 2

    status = read_status(run_dir)
    read_rows_ = [r for r in rows if r["variant"] == READ]
    assert (status["state"], status["done"], status["total"]) == ("done", 9, 9)  # every episode ...
    assert status["ok"] == len(read_rows_) == 3  # ... and the read variant's counts
    assert status["successes"] == sum(bool(r["success"]) for r in read_rows_)
    summary = json.loads((run_dir / "rows.json").read_text())["summary"]
    assert summary["read_variant"] == READ and summary["episodes"] == 3 and summary["total_seeds"] == 3
    assert summary["episodes_run"] == 9 and list(summary["variants"]) == ["base", *NAMES]
    for v, counts in summary["variants"].items():
        mine = [r for r in rows if (r["variant"] or "base") == v]
        assert counts["episodes"] == 3 and counts["successes"] == sum(bool(r["success"]) for r in mine)
    assert "read variant  dim-light" in out.stdout and "variant camera-left: successes" in out.stdout

    filmed = {(r["variant"], r["video"]) for r in rows if r["seed"] == 0}  # seed 0 is filmed on every variant
    assert filmed == {(v, video_relpath(0, None, v)) for v in (None, *NAMES)}
    assert all((run_dir / video).stat().st_size > 0 for _, video in filmed)
    assert not any(r["video"] for r in rows if r["seed"] != 0)

    config["variant_sha256"]["dim-light"] = "0" * 64  # a variant that is not the one the run started on
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    again = run_eval("--resume", str(run_dir))
    assert again.returncode == 2 and "variant dim-light changed since the run started" in again.stderr, again.stderr
    assert len(read_rows(run_dir)) == len(rows)


def test_an_unknown_variant_is_refused_at_launch_in_one_line(tmp_path, capsys):
    doc, _ = crossed_plan(tmp_path, names=("dim-light", "foggy"), read="base")
    run_dir = tmp_path / "runs" / "r"
    assert main(["--prereg", str(doc), "--arm", "oracle", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fontaine-eval: error: "), err
    assert "variant 'foggy'" in err[0] and "declared: dim-light, camera-left" in err[0], err
    assert not run_dir.exists()


def test_a_crossed_design_on_ray_is_refused_before_ray_starts(tmp_path, capsys):
    doc, _ = crossed_plan(tmp_path)
    run_dir = tmp_path / "runs" / "r"
    assert main(["--prereg", str(doc), "--arm", "oracle", "--run-dir", str(run_dir), "--ray", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "crossed design (2 registered variants beside base)" in err[0], err
    assert "leave out --ray" in err[0] and not run_dir.exists()


def test_a_plans_inline_variants_on_a_built_in_env_are_resolved_and_hashed_into_the_config(tmp_path):
    from engine.cli.parser import build_parser
    from engine.cli.resolve import resolve
    from engine.envs.variant_env import resolve_variants

    inline = {"dim": {"lighting": {"intensity": 0.3}}, "left": {"camera_offsets": {"front": [0.0, 0.02, 0.0]}}}
    doc = tmp_path / "plan.md"
    plan = PLAN.replace("  env: lab/env.yaml\n  env_sha256: {digest}\n", "")  # boat-on-disk, the default
    doc.write_text(plan.format(names="dim, left", read="base").replace(
        "  variants: [dim, left]\n", f"  variants: {json.dumps(inline)}\n"))
    freeze(doc)
    run_dir = tmp_path / "runs" / "r"
    config, _, resume = resolve(build_parser().parse_args(["--prereg", str(doc), "--arm", "oracle",
                                                           "--run-dir", str(run_dir)]))
    expected = resolve_variants(config.env, ["dim", "left"], inline)
    assert (config.variants, config.variant_declarations, config.read_variant) == (["dim", "left"], inline, "base")
    assert config.camera_variants == ["left"] and config.variant_sha256 == {v.name: v.sha256() for v in expected}
    assert len(config.jobs()) == 9 and config.workers == 2 and not resume and not run_dir.exists()


@pytest.mark.parametrize("recorded, says", [
    ({"variants": ["dim-light", "dim-light"]}, "config.variants is not a list of distinct variant names"),
    ({"variants": ["base"]}, "config.variants is not a list of distinct variant names"),
    ({"variants": ["Dim Light"]}, "config.variants is not a list of distinct variant names"),
    ({"variants": "dim-light"}, "config.variants is str"),
    ({"variant_sha256": ["x"]}, "config.variant_sha256 is list"),
    ({"pool_cameras": "yes"}, "config.pool_cameras is str"),
])
def test_a_resumed_manifests_variant_fields_are_checked_before_anything_runs(tmp_path, recorded, says):
    from engine.cli.resolve import check_resumed
    from prereg.core.errors import UsageError

    with pytest.raises(UsageError, match="the run cannot be resumed") as err:
        check_resumed({"run_id": "r", "seeds": [0, 1], **recorded}, tmp_path / "manifest.json")
    assert says in str(err.value)
