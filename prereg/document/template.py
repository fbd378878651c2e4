"""The template `fontaine-prereg new` writes: every field present, each with the seeds' meaning."""

from __future__ import annotations

from datetime import datetime, timezone

TEMPLATE = """---
fontaine: fontaine-prereg/1
id: {prereg_id}
title: "{title}"
created: {created}
arms:
  - name: arm-a
    policy: molmoact2-discrete       # scripted | molmoact2 (flow) | molmoact2-discrete
    checkpoint: allenai/MolmoAct2-SO100_101   # a path, a Hugging Face id, or tiny
    revision: PIN-ME                 # a 40-hex commit (fontaine-eval prints the one it loaded); sha256:<weights_sha256> for a local dir
    decode: reference                # flow | reference | grammar-masked
    # fast_revision: COMMIT          # reference / grammar-masked: the release FAST tokenizer's 40-hex commit
    convmap: official                # official | identity | fit
    convmap_overrides: []            # e.g. [shoulder_lift=-1,90, wrist_roll=-90]
    norm_tag: so100_so101_molmoact2
    dtype: bf16                      # bf16 | fp32
    # workers: 8                     # default: the protocol's
    # flow_steps: 10                 # flow decode only
    # task: put the boat on the disk
protocol:
  seeds: 0-99                        # a list [0, 1], a range 0-99, or {{start: 0, count: 100}}
  episode_seconds: 30                # the budget in seconds (30 s = 900 ticks)
  workers: 8
  video_draw: auto                   # every seed up to 100 seeds; 0 = first episode per worker; none | all | seeds:6,28
  # record_predicts: true            # predicts.jsonl: every predict's tokens, chunk and fallback
  # pass_env: [LAB_TRACE_DIR]       # variables the workers get by name (their environment is an allow-list)
  # variants: [dim-light, clutter]   # crossed design: every seed also runs on these (the env's, or declared inline: docs/envs.md)
  # read_variant: base               # the variant the decision and the headline k/n read (base: the scene as declared)
  # pool_cameras: false              # true: the pooled rate averages the camera-pose variants too
reads:
  primary: successes                 # successes / n with a 95% interval
  interval: both                     # wilson | clopper-pearson | both
  validity:
    reset_strikes_max: 0
    error_rows_max: 0
    # zero_fallback_rate_max: 0.10   # per predict
  secondary: [engaged, knock_aways, quiet, progress_final_mean, progress_final_median, success_seeds, chart]
  # comparator: {{run: ../runs/flow_100ep_30s, label: flow pathway}}   # or {{arm: arm-a, for: [arm-b]}}
  power:                             # information only: validate and freeze print what the planned seeds can detect
    assumed_rates: {{arm-a: 0.1}}      # your best guess of each arm's success rate before the run (or one number for all)
    minimum_effect: {{success_rate: 0.15, progress_cm: 1.0}}   # the smallest effect worth detecting: a rate difference, a paired cm delta
    # delta_sd_cm: 2.5               # SD of the per-seed paired progress_final_cm delta (arm minus comparator), cm
    # pilot: ../runs/pilot-run       # or estimate that SD from a pilot run's rows.jsonl (relative to this file)
  # real: {{trials: 60, alpha: 0.05, metric: success, selection_seed: 20261207, sim_k: 20, jitter_cm: 1.0}}   # docs/real.md
gates:
  gpu_hours: 1.5
  pace:
    after_episodes: 10
    limit_hours: 2.5
  # decided: stop   # curtailment: stop once no remaining seed can change any decision rule (docs/prereg.md)
  # tripwires:      # the shim's checks, run before the first episode; a failure spends nothing (docs/convmap.md)
  #   coverage: {{max_uncovered: 0.30, span_limited: [wrist_roll]}}   # wrist_roll: a span mismatch on this scene
  #   first_action: {{anchor_deg: 6.31}}   # mean |first action - state| vs max(2 x anchor, 5 deg)
decision_rules:
  - if: successes >= 1
    then: WHAT HAPPENS IF THIS HOLDS
  - if: successes == 0
    then: WHAT HAPPENS OTHERWISE
---

# {title}

## Plain words

What is asked, why, and what each answer would change. Written so that someone who was not
in the room can tell, before the launch, what would count as which result.

## Frozen reads

1. Primary: successes / n (the sim's physics criterion), 95% interval.
2. Validity: reset strikes must be 0; zero-fallback count and rate per predict; error rows.
3. Secondary (record-only): engagement, knock-aways, mean/median progress_final_cm, per-seed chart.

## Gates and tripwires

GPU-hours, the pace tripwire, and what happens when one trips.

<!-- Freeze with `fontaine-prereg freeze FILE` before the launch. Everything above the seal
     is frozen; notes may be written below it; changes to the plan go in amendments
     (`fontaine-prereg amend FILE`); the results section is written by `fontaine-prereg report`. -->
"""


def render(prereg_id: str = "my-eval", title: str = "TITLE", created: str | None = None) -> str:
    created = created or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    return TEMPLATE.format(prereg_id=prereg_id, title=title.replace('"', "'"), created=created)
