"""Validation of a section's plan: its gates (pace, GPU-hours, stall, decided, the sequential test, the
registered tripwires), reads (primary, interval, validity, power, comparators), the comparison and the
decision rules; each problem names its field and line."""

from __future__ import annotations

from prereg.core.limits import MAX_EPISODE_SECONDS, MIN_EPISODE_SECONDS
from prereg.core.vocabulary import (
    INTERVALS,
    JOINT_NAMES,
    PRIMARY_READS,
    RULE_READS,
    SECONDARY_READS,
    TRIPWIRES,
)
from prereg.document.check_arms import episode_seconds_ok, nonneg, parse_seeds
from prereg.document.fields import (
    DECIDED_VALUES,
    EFFECT_KEYS,
    GATE_KEYS,
    POWER_KEYS,
    READS_KEYS,
    RIG_KEYS,
    RULE_KEYS,
    TRIPWIRE_KEYS,
    TRIPWIRES_HINT,
    VALIDITY_KEYS,
    Ctx,
    Errors,
)
from prereg.document.layout import Section
from prereg.document.model import (
    Arm,
    Comparator,
    CoverageTripwire,
    FirstActionTripwire,
    PowerPlan,
    Protocol,
    Tripwires,
    Validity,
)
from prereg.document.rules import Rule, parse_condition


def check_gates(raw, ctx: Ctx, required: bool) -> dict:
    if raw is None:
        if required:
            ctx.err(("gates",), "missing", "at least gpu_hours; a pace tripwire is advised")
        return {}
    if not isinstance(raw, dict):
        ctx.err(("gates",), "must be a mapping (gpu_hours, pace, stall)")
        return {}
    out: dict = {}
    for k in raw:
        if k not in GATE_KEYS:
            ctx.err(("gates", k), f"unknown gate '{k}'", "known: " + ", ".join(GATE_KEYS))
    if "gpu_hours" in raw:
        v = raw["gpu_hours"]
        if v is not None and not (nonneg(v) and v > 0):
            ctx.err(("gates", "gpu_hours"), f"must be a number of GPU-hours > 0, got {v!r}")
        else:
            out["gpu_hours"] = None if v is None else float(v)
    pace = raw.get("pace")
    if pace is not None:
        if not isinstance(pace, dict):
            ctx.err(("gates", "pace"), "must be a mapping {after_episodes: K, limit_hours: H}")
        else:
            for k in pace:
                if k not in ("after_episodes", "limit_hours"):
                    ctx.err(("gates", "pace", k), f"unknown pace field '{k}'", "after_episodes, limit_hours")
            lim = pace.get("limit_hours")
            if lim is None or not (nonneg(lim) and lim > 0):
                ctx.err(("gates", "pace", "limit_hours"), f"must be a number of hours > 0, got {lim!r}")
            else:
                out["pace_limit_hours"] = float(lim)
            k = pace.get("after_episodes", 10)
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                ctx.err(("gates", "pace", "after_episodes"), f"must be a whole number >= 1, got {k!r}")
            else:
                out["pace_after_episodes"] = k
    stall = raw.get("stall")
    if stall is not None:
        if not isinstance(stall, dict):
            ctx.err(("gates", "stall"), "must be a mapping {factor: 4, min_s: 60}")
        else:
            for k, dest in (("factor", "stall_factor"), ("min_s", "stall_min_s")):
                if k in stall:
                    if not (nonneg(stall[k]) and stall[k] > 0):
                        ctx.err(("gates", "stall", k), f"must be a number > 0, got {stall[k]!r}")
                    else:
                        out[dest] = float(stall[k])
            for k in stall:
                if k not in ("factor", "min_s"):
                    ctx.err(("gates", "stall", k), f"unknown stall field '{k}'", "factor, min_s")
    if "warn_fraction" in raw:
        v = raw["warn_fraction"]
        if not (nonneg(v) and 0 < v <= 1):
            ctx.err(("gates", "warn_fraction"), f"must be a fraction in (0, 1], got {v!r}")
        else:
            out["warn_fraction"] = float(v)
    if "decided" in raw:
        v = raw["decided"]
        if v not in DECIDED_VALUES:
            ctx.err(("gates", "decided"), f"must be one of {', '.join(DECIDED_VALUES)}, got {v!r}",
                    "decided: stop ends the run once no remaining seed can change a decision rule's verdict")
        else:
            out["decided"] = v
    if "sequential" in raw:
        bad = sequential_problems(raw["sequential"])
        for k, msg in bad:
            ctx.err(("gates", "sequential") + ((k,) if k else ()), msg,
                    "a registered SPRT of the success rate: {p0: 0.05, p1: 0.2, alpha: 0.05, beta: 0.1}")
        if not bad:
            out["sequential"] = {k: float(raw["sequential"][k]) for k in ("p0", "p1", "alpha", "beta")}
    if "tripwires" in raw:
        tripwires = _check_tripwires(raw["tripwires"], ctx)
        if tripwires is not None:
            out["tripwires"] = tripwires.as_dict()
    return out


def _check_tripwires(raw, ctx: Ctx) -> Tripwires | None:
    """gates.tripwires: the shim's tripwires the driver runs before the first episode; None when invalid."""
    path = ("gates", "tripwires")
    if not isinstance(raw, dict) or not raw:
        ctx.err(path, "must be a mapping naming at least one of " + ", ".join(TRIPWIRES), TRIPWIRES_HINT)
        return None
    err = Errors(ctx, path)
    err.unknown_keys(raw, TRIPWIRES, "tripwire")
    kw: dict = {}
    for name in TRIPWIRES:
        if name not in raw:
            continue
        body = raw[name]
        if body is None:
            body = {}  # `coverage:` alone registers it with its defaults
        if not isinstance(body, dict):
            err((name,), f"must be a mapping of its settings ({', '.join(TRIPWIRE_KEYS[name])}), got {body!r}",
                TRIPWIRES_HINT)
            continue
        for k in body:
            if k not in TRIPWIRE_KEYS[name]:
                err((name, k), f"unknown {name} field '{k}'", "known: " + ", ".join(TRIPWIRE_KEYS[name]))
        kw[name] = body
    coverage = first_action = None
    if "coverage" in kw:
        coverage = _check_coverage_tripwire(kw["coverage"], err)
    if "first_action" in kw:
        first_action = _check_first_action_tripwire(kw["first_action"], err)
    return None if err.bad else Tripwires(coverage, first_action)


def _check_coverage_tripwire(body: dict, err) -> CoverageTripwire:
    out: dict = {}
    if "max_uncovered" in body:
        v = body["max_uncovered"]
        if not _rate(v):
            err(("coverage", "max_uncovered"), f"must be a fraction in (0, 1), got {v!r}",
                "the share of a joint's reachable range the map may leave clipped: 0.30 is 30%")
        else:
            out["max_uncovered"] = float(v)
    if "span_limited" in body:
        joints = body["span_limited"]
        if isinstance(joints, str):
            joints = [joints]
        if not isinstance(joints, list):
            err(("coverage", "span_limited"), f"must be a list of joints, got {joints!r}",
                "the joints whose span mismatch may warn instead of fail, e.g. [wrist_roll]; one of "
                + ", ".join(JOINT_NAMES))
        else:
            seen: list[str] = []
            for i, j in enumerate(joints):
                sub = ("coverage", "span_limited", i) if isinstance(body["span_limited"], list) else ("coverage", "span_limited")
                if j not in JOINT_NAMES:
                    err(sub, f"unknown joint {j!r}", "one of " + ", ".join(JOINT_NAMES))
                elif j in seen:
                    err(sub, f"joint {j!r} given twice", "list each joint once")
                else:
                    seen.append(j)
            out["span_limited"] = tuple(seen)
    rig = body.get("rig")
    if rig is not None:
        if not isinstance(rig, dict):
            err(("coverage", "rig"), f"must be a mapping {{seeds, episode_seconds}}, got {rig!r}",
                "the scripted oracle's rollouts on the run's scene that make the rig table, e.g. {seeds: 0-5, episode_seconds: 30}")
        else:
            for k in rig:
                if k not in RIG_KEYS:
                    err(("coverage", "rig", k), f"unknown rig field '{k}'", "known: " + ", ".join(RIG_KEYS))
            if "seeds" in rig:
                seeds = _tripwire_seeds(rig["seeds"], ("coverage", "rig", "seeds"), err,
                                        "a list [0, 1, 2] or a range '0-5'", "e.g. 0-5")
                if seeds is not None:
                    out["rig_seeds"] = seeds
            if "episode_seconds" in rig:
                v = rig["episode_seconds"]
                if not episode_seconds_ok(v):
                    err(("coverage", "rig", "episode_seconds"),
                        f"must be seconds from {MIN_EPISODE_SECONDS:g} to {MAX_EPISODE_SECONDS:g}, got {v!r}", "e.g. 30")
                else:
                    out["rig_episode_seconds"] = float(v)
    return CoverageTripwire(**out)


def _tripwire_seeds(raw, sub: tuple, err, form_hint: str, example: str) -> tuple[int, ...] | None:
    """A tripwire's seeds: at least one, each once (a list or a range); None, said through `err`, when not."""
    try:
        seeds = parse_seeds(raw)
    except ValueError as exc:
        err(sub, str(exc), form_hint)
        return None
    if not seeds or len(set(seeds)) != len(seeds):
        err(sub, "must name at least one seed, each once", example)
        return None
    return tuple(seeds)


def _check_first_action_tripwire(body: dict, err) -> FirstActionTripwire:
    out: dict = {}
    if "seeds" in body:
        seeds = _tripwire_seeds(body["seeds"], ("first_action", "seeds"), err,
                                "a list [0, 1, 2] or a range '0-2'", "e.g. [0, 1, 2]")
        if seeds is not None:
            out["seeds"] = seeds
    if "anchor_deg" in body:
        v = body["anchor_deg"]
        values = v if isinstance(v, list) else [v]
        if len(values) not in (1, len(JOINT_NAMES)) or not all(nonneg(x) for x in values):
            err(("first_action", "anchor_deg"), f"must be one number of degrees >= 0 or {len(JOINT_NAMES)}, got {v!r}",
                "the same metric on a reference policy, e.g. 6.31, or one per joint: " + ", ".join(JOINT_NAMES))
        else:
            out["anchor_deg"] = tuple(float(x) for x in values) * (len(JOINT_NAMES) if len(values) == 1 else 1)
    if "max_deg" in body:
        v = body["max_deg"]
        if not (nonneg(v) and v > 0):
            err(("first_action", "max_deg"), f"must be a number of degrees > 0, got {v!r}",
                "the limit per joint without an anchor, e.g. 10")
        else:
            out["max_deg"] = float(v)
    return FirstActionTripwire(**out)


def check_reads(raw, ctx: Ctx, sec: Section, arms: list[Arm], known: set[str]) -> dict:
    if raw is None:
        if sec.number == 0:
            ctx.err(("reads",), "missing", "at least the primary read: successes")
        return {}
    if not isinstance(raw, dict):
        ctx.err(("reads",), "must be a mapping (primary, validity, secondary, comparator)")
        return {}
    out: dict = {}
    for k in raw:
        if k not in READS_KEYS:
            ctx.err(("reads", k), f"unknown reads field '{k}'", "known: " + ", ".join(READS_KEYS))
    if "primary" in raw:
        if raw["primary"] not in PRIMARY_READS:
            ctx.err(("reads", "primary"), f"unknown read {raw['primary']!r}", "the primary read is: successes")
        else:
            out["primary"] = raw["primary"]
    elif sec.number == 0:
        ctx.err(("reads", "primary"), "missing", "the primary read is: successes")
    if "interval" in raw:
        if raw["interval"] not in INTERVALS:
            ctx.err(("reads", "interval"), f"unknown interval {raw['interval']!r}", "one of " + ", ".join(INTERVALS))
        else:
            out["interval"] = raw["interval"]
    if "validity" in raw:
        out["validity"] = _check_validity(raw["validity"], ctx)
    if "secondary" in raw:
        sec_raw = raw["secondary"]
        if not isinstance(sec_raw, list):
            ctx.err(("reads", "secondary"), "must be a list of read names", "known: " + ", ".join(SECONDARY_READS))
        else:
            names = []
            for i, r in enumerate(sec_raw):
                if r not in SECONDARY_READS:
                    ctx.err(("reads", "secondary", i), f"unknown read {r!r}", "known: " + ", ".join(SECONDARY_READS))
                else:
                    names.append(r)
            out["secondary"] = tuple(names)
    if "comparator" in raw:
        out["comparators"] = _check_comparators(raw["comparator"], ctx, arms, known)
    if "power" in raw:
        plan = _check_power(raw["power"], ctx, known)
        if plan is not None:
            out["power"] = plan
    if "real" in raw:
        from prereg.document.real_spec import parse as parse_real

        spec, problems = parse_real(raw["real"], known)
        for sub, msg, hint in problems:
            ctx.err(("reads", "real") + sub, msg, hint)
        if spec is not None:
            from dataclasses import replace

            out["real"] = replace(spec, line=ctx.line(("reads", "real")))
    return out


def _rate(v) -> bool:
    return nonneg(v) and 0 < v < 1


def _check_power(raw, ctx: Ctx, known: set[str]) -> PowerPlan | None:
    """reads.power: assumed rates, the effect worth detecting, and the paired delta's SD (or a pilot run)."""
    path = ("reads", "power")
    hint = "{assumed_rates: {arm-a: 0.1}, minimum_effect: {success_rate: 0.15, progress_cm: 1.0}, delta_sd_cm: 2.5}"
    if not isinstance(raw, dict):
        ctx.err(path, "must be a mapping (" + ", ".join(POWER_KEYS) + ")", hint)
        return None
    err = Errors(ctx, path)
    err.unknown_keys(raw, POWER_KEYS, "power field")
    kw: dict = {"line": ctx.line(path)}
    rates = raw.get("assumed_rates")
    if rates is not None:
        rate_hint = "a success rate strictly between 0 and 1, e.g. 0.1: your best guess before the run"
        if isinstance(rates, dict):
            pairs = []
            for arm, v in rates.items():
                if arm not in known:
                    err(("assumed_rates", arm), f"unknown arm {arm!r}", "known arms: " + ", ".join(sorted(known)))
                elif not _rate(v):
                    err(("assumed_rates", arm), f"must be a rate in (0, 1), got {v!r}", rate_hint)
                else:
                    pairs.append((str(arm), float(v)))
            kw["arm_rates"] = tuple(pairs)
        elif _rate(rates):
            kw["default_rate"] = float(rates)
        else:
            err(("assumed_rates",), f"must be a rate in (0, 1) or a mapping {{arm: rate}}, got {rates!r}", rate_hint)
    effect = raw.get("minimum_effect")
    if effect is not None:
        if not isinstance(effect, dict):
            err(("minimum_effect",), f"must be a mapping {{success_rate: 0.15, progress_cm: 1.0}}, got {effect!r}",
                "the smallest effect worth detecting: a success-rate difference, and a paired progress delta in cm")
        else:
            for k, v in effect.items():
                if k not in EFFECT_KEYS:
                    err(("minimum_effect", k), f"unknown effect '{k}'", "known: " + ", ".join(EFFECT_KEYS))
                elif k == "success_rate" and not _rate(v):
                    err(("minimum_effect", k), f"must be a rate difference in (0, 1), got {v!r}",
                        "absolute: 0.15 is 15 percentage points")
                elif k == "progress_cm" and not (nonneg(v) and v > 0):
                    err(("minimum_effect", k), f"must be a distance in cm > 0, got {v!r}")
                elif k == "success_rate":
                    kw["min_success_effect"] = float(v)
                elif k == "progress_cm":
                    kw["min_progress_cm"] = float(v)
    if raw.get("delta_sd_cm") is not None and raw.get("pilot") is not None:
        err(("pilot",), "give delta_sd_cm or pilot, not both", "the paired delta's SD has one source")
    sd = raw.get("delta_sd_cm")
    if sd is not None:
        if not (nonneg(sd) and sd > 0):
            err(("delta_sd_cm",), f"must be a distance in cm > 0, got {sd!r}",
                "the SD of the per-seed paired progress_final_cm delta (arm minus comparator)")
        else:
            kw["delta_sd_cm"] = float(sd)
    pilot = raw.get("pilot")
    if pilot is not None:
        if not isinstance(pilot, str) or not pilot.strip():
            err(("pilot",), f"must be a run directory (a path), got {pilot!r}", "relative to this document")
        else:
            kw["pilot"] = pilot
    return None if err.bad else PowerPlan(**kw)


def _check_validity(v, ctx: Ctx) -> Validity:
    if not isinstance(v, dict):
        ctx.err(("reads", "validity"), "must be a mapping of thresholds", "known: " + ", ".join(VALIDITY_KEYS))
        return Validity()
    kw = {}
    for k, val in v.items():
        path = ("reads", "validity", k)
        if k not in VALIDITY_KEYS:
            ctx.err(path, f"unknown threshold '{k}'", "known: " + ", ".join(VALIDITY_KEYS))
        elif k == "zero_fallback_rate_max":
            if val is not None and not (nonneg(val) and val <= 1):
                ctx.err(path, f"must be a rate in [0, 1], got {val!r}")
            else:
                kw[k] = None if val is None else float(val)
        elif isinstance(val, bool) or not isinstance(val, int) or val < 0:
            ctx.err(path, f"must be a whole number >= 0, got {val!r}")
        else:
            kw[k] = val
    return Validity(**kw)


def _check_comparators(raw, ctx: Ctx, arms: list[Arm], known: set[str]) -> tuple[Comparator, ...]:
    items = raw if isinstance(raw, list) else [raw]
    out = []
    for i, c in enumerate(items):
        path = ("reads", "comparator", i) if isinstance(raw, list) else ("reads", "comparator")
        if not isinstance(c, dict) or ("arm" in c) == ("run" in c):
            ctx.err(path, "a comparator is {arm: NAME} or {run: RUN_DIR}, with an optional label and for: [arms]")
            continue
        for k in c:
            if k not in ("arm", "run", "label", "for"):
                ctx.err(path + (k,), f"unknown comparator field '{k}'", "arm, run, label, for")
        if "arm" in c and c["arm"] not in known:
            ctx.err(path + ("arm",), f"unknown arm {c['arm']!r}", "known arms: " + ", ".join(sorted(known)))
            continue
        for_arms = c.get("for")
        if for_arms is not None:
            if isinstance(for_arms, str):
                for_arms = [for_arms]
            bad = [a for a in for_arms if a not in known]
            if bad:
                ctx.err(path + ("for",), f"unknown arm(s) {bad}", "known arms: " + ", ".join(sorted(known)))
                continue
            for_arms = tuple(for_arms)
        out.append(Comparator(arm=c.get("arm"), run=None if c.get("run") is None else str(c["run"]),
                              label=str(c.get("label") or ""), for_arms=for_arms, line=ctx.line(path)))
    return tuple(out)


def check_comparison(raw, ctx: Ctx, known: set[str], protocol: Protocol | None):
    """`comparison:` (prereg/document/comparison_spec.py): two arms decided by an anytime-valid test; None when absent or invalid."""
    if raw is None:
        return None
    from prereg.document.comparison_spec import parse

    spec, problems = parse(raw, known, len(protocol.seeds) if protocol else None)
    for sub, msg, hint in problems:
        ctx.err(("comparison",) + sub, msg, hint)
    if spec is not None:
        from dataclasses import replace

        spec = replace(spec, line=ctx.line(("comparison",)))
    return spec


def check_rules(raw, ctx: Ctx, sec: Section, declared: set[str], known: set[str]) -> list[Rule]:
    """`declared`: the arm names this section declares, valid or not (a one-arm section's rules
    default to its arm even while that arm has a problem of its own, such as the template's PIN-ME)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        ctx.err(("decision_rules",), "must be a list of {if: CONDITION, then: ACTION}")
        return []
    out = []
    for i, r in enumerate(raw):
        path = ("decision_rules", i)
        if not isinstance(r, dict) or "if" not in r or "then" not in r:
            ctx.err(path, "a decision rule is {if: 'successes >= 1', then: 'what happens'}")
            continue
        for k in r:
            if k not in RULE_KEYS:
                ctx.err(path + (k,), f"unknown rule field '{k}'", "if, then, arm")
        default_arm = r.get("arm")
        if default_arm is None and len(declared) == 1:
            default_arm = next(iter(declared))
        if default_arm is not None and default_arm not in known:
            ctx.err(path + ("arm",), f"unknown arm {default_arm!r}", "known arms: " + ", ".join(sorted(known)))
            continue
        cond = str(r["if"])
        clauses, msg = parse_condition(cond, default_arm, known)
        if msg:
            ctx.err(path + ("if",), msg, "CONDITION is [ARM.]READ OP VALUE joined by 'and'; reads: " + ", ".join(RULE_READS))
            continue
        out.append(Rule(cond, str(r["then"]), sec.name, ctx.line(path), tuple(clauses)))
    return out

def sequential_problems(d) -> list[tuple[str, str]]:
    """(field, message) for a `gates.sequential` mapping (prereg/stats/sequential.py's Sprt); [] when it is well formed."""
    if not isinstance(d, dict):
        return [("", "must be a mapping {p0, p1, alpha, beta}")]
    out = [(k, f"unknown field '{k}'") for k in d if k not in ("p0", "p1", "alpha", "beta")]
    vals = {}
    for k in ("p0", "p1", "alpha", "beta"):
        v = d.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < (1 if k[0] == "p" else 0.5):
            out.append((k, f"must be a number in (0, {'1' if k[0] == 'p' else '0.5'}), got {v!r}"))
        else:
            vals[k] = float(v)
    if "p0" in vals and "p1" in vals and not vals["p0"] < vals["p1"]:
        out.append(("p1", f"must be above p0 ({vals['p0']:g}), got {vals['p1']:g}"))
    return out
