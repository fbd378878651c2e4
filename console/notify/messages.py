"""What Fontaine posts to Discord about a run, and when: pure functions over a run's snapshot.

The owner follows a run in-channel (the seeds): a launch post, an update every ~10 episodes,
an alert when a tripwire or a stall trips, a post when the run stops, fails or dies, a
completion post, and the frozen reads with the per-seed chart. Each post has a key that is stable
for the run, so whoever sends them can keep a ledger and never send one twice:

    launch            the run is running (its policy loaded, its registered tripwires passed): prereg,
                      arm(s), policy kind, (a model's) checkpoint + revision, decode, dtype, convmap,
                      seeds, episode budget, workers, gates, from the manifest as the driver has
                      completed it (`policy_resolved`); never from a manifest not yet written
    update:N          N = the latest multiple of every_episodes done; never at N >= total (the
                      end posts say it). Milestones missed while no notifier ran are not posted
                      one by one: update:N carries an explicit catch-up listing each missed
                      milestone with its figures as they stood then, and `covers` names their keys
                      so the ledger records them as posted
    tripwire:GATE     GATE = gpu_hours | pace | gate; a live gate reading that tripped, or the stop
                      reason naming it
    stall:N           the heartbeat is stale while live, at N episodes done (during start-up, against
                      the start-up limit, not the stall limit)
    stopped:N, failed:N, died:N   the run ended early, with the reason and the counts
    done              completed, frozen reads not written yet (counts from the rows)
    results           results.md exists: the frozen reads, shortened, and chart.png attached

Done and total are the run's by the shared rules (prereg/rundir/runstate.py): episodes with a row,
the last row of each planned seed, so a copied line never posts "9/8 episodes". A comparison run's
posts name both arms and count them apart ("clumsy 4/13 · steady 12/12 successes"). Posts owed to
a run that has since ended fold into its end post (`fold_into_end`), marked late, and an end post
composed well after the run ended says so (`mark_late`). The words are
console/notify/wording.py's; nothing here touches the network or writes a file: the outbox
(console/notify/outbox.py) decides when to call `due_posts`, the courier (courier.py) delivers what it returns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from console.notify.snapshot import EVERY_EPISODES, RunSnapshot, tally
from console.notify.wording import (
    COLOURS,
    CONTENT_MAX,
    DESCRIPTION_MAX,
    DIED,
    DONE,
    FOOTER_MAX,
    LAUNCH,
    REAL_TRIALS,
    RESULTS,
    STALL,
    TITLE_MAX,
    TOLD_ABOVE,
    TRIPWIRE,
    UPDATE,
    Post,
    clip,
    code,
    describe_gates,
    describe_stall,
    esc,
    hours,
    no_local_paths,
    num,
    policy_facts,
    published_lines,
    report_head,
    saved_line,
    seed_span,
    short,
    shorten_markdown,
    story_head,
    tripwire_joint_lines,
    variant_lines,
    without_sections,
)
from prereg import rundir as rd
from prereg.core.safe_read import CHART_MAX_BYTES
from prereg.core.words import plural
from prereg.rundir.gates import TRIPPED, WARN, PaceInputs, evaluate_gates, projected_wall_s
from prereg.rundir.manifest import tripwire_record
from prereg.rundir.outcomes import OUTCOME_LABELS
from prereg.rundir.real import OUTCOMES
from prereg.rundir.status import gpu_hours_source, status_reason_text, status_stop
from prereg.stats.comparison_report import live_evidence, savings
from prereg.stats.curtail import settled_text

EVERY_REAL = 10  # a post every this many real trials recorded (real.jsonl)
CATCH_UP_S = 6 * 3600.0  # a run that ended longer ago than this, never posted about, is owed nothing
DIED_AFTER_S = 30.0  # a run whose process is gone is said dead once its heartbeat is this old (a kill records first)
LATE_S = 120.0  # an end post composed longer than this after the run ended says when it ended


def due_posts(
    snap: RunSnapshot,
    posted: set[str],
    *,
    every_episodes: int = EVERY_EPISODES,
    catch_up_s: float = CATCH_UP_S,
    every_real: int = EVERY_REAL,
) -> list[Post]:
    """The posts this run is owed now and that are not in `posted` (ledger + queue), in order.

    A run that was already over long ago and has never been posted about gets nothing: turning
    the webhook on must not flood the channel with last week's runs. While a run is live, only
    the latest missed update is owed (with a note), never one post per missed milestone; once
    it is over, the end posts replace the updates.
    """
    if not snap.present:
        return []
    if forgotten(snap.over, posted, snap.status_age_s, catch_up_s) or forgotten(
            snap.died, posted, snap.heartbeat_age_s, catch_up_s):  # a run that died last week, never posted about
        return []
    out: list[Post] = []
    if snap.live and LAUNCH not in posted and launch_ready(snap):
        out.append(launch_post(snap))
    if snap.live and LAUNCH in {*posted, *(p.key for p in out)}:
        update = _due_update(snap, posted, every_episodes)
        if update is not None:
            out.append(update)
    out.extend(p for p in _alerts(snap) if p.key not in posted)
    real = real_trials_post(snap, posted, every_real)
    if real is not None:
        out.append(real)
    if snap.over:
        out.extend(p for p in _end_posts(snap, posted) if p.key not in posted)
    elif snap.died and (snap.heartbeat_age_s is None or snap.heartbeat_age_s > DIED_AFTER_S):
        died = _died_post(snap)
        if died.key not in posted:
            out.append(died)
    return out


def real_trials_post(snap: RunSnapshot, posted: set[str], every: int = EVERY_REAL) -> Post | None:
    """Every `every` real trials recorded (real.jsonl: the console's real session, an import), one post with
    the trials so far per arm by outcome; only the latest milestone missed is owed, as for updates."""
    n = len(snap.real)
    if every <= 0 or n < every:
        return None
    milestone = (n // every) * every
    sent = [int(k.split(":", 1)[1]) for k in posted if k.startswith(f"{REAL_TRIALS}:") and k.split(":", 1)[1].isdigit()]
    if milestone <= max(sent, default=0):
        return None
    lines, counts = [], {}
    for t in snap.real:
        counts.setdefault(t.arm, Counter())[t.outcome] += 1
    for arm, c in counts.items():
        said = " · ".join(f"{c[o]} {o.replace('_', '-')}" for o in OUTCOMES if c[o])
        lines.append(f"{esc(short(arm, 60))}: {sum(c.values())} trials · {said}")
    last = snap.real[-1]
    lines.append(f"last: seed {last.seed}, {last.outcome.replace('_', '-')}, by {esc(short(last.operator, 60))}")
    lines.append("*the real read is the report's: run it once the selected seeds are done*")
    return _post(snap, REAL_TRIALS, f"{REAL_TRIALS}:{milestone}", f"{n} real trials recorded",
                 f"Real trials · {snap.run_id}", "\n".join(lines))


def forgotten(over: bool, posted: set[str], status_age_s: float | None, catch_up_s: float = CATCH_UP_S) -> bool:
    """A run that ended longer than `catch_up_s` ago and was never posted about is owed nothing:
    turning the webhook on must not flood the channel with last week's runs (nor read their rows)."""
    return over and not posted and (status_age_s is None or status_age_s > catch_up_s)


def launch_ready(snap: RunSnapshot) -> bool:
    """The launch post waits for the run to be running: the driver has written its manifest, loaded
    the policy into it (`policy_resolved`) and passed its registered tripwires, so the post names
    what runs (never "arm ? · policy ?")."""
    return rd.MANIFEST in snap.present and snap.run_state.recorded in (rd.RUNNING, rd.STOPPING)


def launch_post(snap: RunSnapshot) -> Post:
    """The launch, from the manifest as engine/run/driver.py writes it (the policy nested; a comparison
    run's two arms, each with its policy)."""
    m = snap.manifest
    lines = []
    prereg_id, sha = m.prereg_id, m.prereg_sha256
    if prereg_id or sha:
        lines.append(f"prereg **{esc(prereg_id or '?')}**" + (f" (sha256 `{sha[:12]}`)" if sha else ""))
    kinds = []
    for arm in snap.arms or (None,):
        pol = policy_facts(m, arm)
        kinds.append(pol["kind"] + (f" {pol['decode']}" if pol.get("decode") else ""))
        lines.extend(_policy_lines(arm or m.arm or "?", pol))
    seeds = list(m.seeds or ())
    proto = [plural(len(seeds) or snap.total, "seed") + (f" ({seed_span(seeds)})" if seeds else "")
             + (" per arm, interleaved by seed" if snap.arms else "")]
    secs = m.episode_seconds
    if secs is not None:
        proto.append(f"{secs:g} s episodes")
    if m.workers:
        proto.append(plural(m.workers, "worker"))
    lines.append(" · ".join(proto))
    if m.variants:  # a crossed design: every seed on each variant
        apart = "" if m.pool_cameras else " · ".join(esc(v) for v in m.camera_variants)
        lines.append(f"variants: {' · '.join(esc(short(v, 40)) for v in m.variants)} (each seed on each; the decision "
                     f"reads {esc(m.read_variant)}" + (f"; camera, read apart: {apart}" if apart else "") + ")")
    budget = f"budget: {plural(snap.total, 'episode')}"
    if secs is not None:
        budget += f" × {secs:g} s simulated"
    lines.append(budget)
    if m.comparison:
        lines.append(f"comparison: {esc(short(_comparison_words(m.comparison), 200))}")
    gates = describe_gates(snap.gate_spec())
    lines.append("gates: " + ("none registered (no GPU-hour or pace limit)" if gates == "none" else gates))
    lines.append("checked: " + describe_stall(snap.gate_spec()))
    # the content line leads with the arm(s): the policy kind follows only when it says something more
    what = "launched" + ("" if snap.arms or kinds[0] == m.arm else f" · {kinds[0]}")
    return _post(snap, LAUNCH, LAUNCH, what, f"Launch · {snap.run_id}", "\n".join(lines))


def _policy_lines(arm: str, pol: dict) -> list[str]:
    out = [f"arm **{esc(arm)}** · policy **{esc(pol['kind'])}**"]
    if pol.get("checkpoint"):
        ck = f"checkpoint `{code(pol['checkpoint'])}`"
        ck += f" @ `{code(pol['revision'])}`" if pol.get("revision") else " (revision: none recorded)"
        if pol.get("weights_sha256"):
            ck += f" · weights `{pol['weights_sha256'][:12]}`"
        out.append(ck)
    bits = [f"{name} {esc(short(pol[name], 60))}" for name in ("decode", "dtype", "convmap") if pol.get(name)]
    if bits:
        out.append(" · ".join(bits))
    return out


def _comparison_words(record: dict) -> str:
    """The registered comparison in a few words: 'A vs B on success, test step, alpha 0.05'."""
    a, b = record.get("arm_a"), record.get("arm_b")
    head = (f"{a} vs {b}" if a and b else "two arms") + (f" on {record['metric']}" if record.get("metric") else "")
    bits = [f"{label} {record[key]}" for key, label in (("test", "test"), ("alpha", "alpha"), ("max_seeds", "max seeds"))
            if record.get(key) is not None]
    return ", ".join([head, *bits])


def update_post(snap: RunSnapshot, milestone: int) -> Post:
    lines = progress_lines(snap)
    warn = [r.message for r in _readings(snap) if r.state == WARN]
    lines.extend(f"warning: {w}" for w in warn)
    return _post(snap, UPDATE, f"{UPDATE}:{milestone}", _successes_words(snap),
                 f"Update · {snap.run_id} · {snap.done}/{snap.total}", "\n".join(lines))


def _successes_words(snap: RunSnapshot, *, knock_aways: bool = True) -> str:
    """The content line's counts: '4 successes · 2 knock-aways', or a comparison run's arms apart,
    each over its own episodes: 'clumsy 4/13 · steady 12/12 successes'."""
    if snap.arms:
        return " · ".join(f"{esc(a)} {snap.counts(a).successes}/{snap.counts(a).rows}" for a in snap.arms) + " successes"
    c = snap.counts()
    return f"{c.successes} successes" + (f" · {c.knock_aways} knock-aways" if knock_aways else "")


def progress_lines(snap: RunSnapshot, said: str = "") -> list[str]:
    """The counts an update reads (each arm's, a comparison run): outcomes, validity, pace, GPU-hours.
    `said`: what the post says above them (an end post's reason), not said again."""
    lines = []
    for arm in snap.arms or (None,):
        lines.extend(_count_lines(snap, arm))
    for story in snap.variants:  # a crossed design: the counts above are the read variant's; each variant's here
        lines.extend(variant_lines(story, len(snap.variants) > 1))
    lines.extend(_read_lines(snap))
    spec = snap.gate_spec()
    elapsed, done, total = snap.elapsed_s, snap.done, snap.total
    if elapsed is not None and done > 0 and not snap.live:  # ended (or died): what it took, nothing projected
        lines.append(f"wall {hours(elapsed)} · pace {elapsed / done:.0f} s/episode")
    elif elapsed is not None and done > 0:
        proj = snap.status.projected_wall_s or projected_wall_s(elapsed, done, total)
        pace = f"pace {elapsed / done:.0f} s/episode"
        if proj is not None:
            pace += f" · projected wall {hours(proj)}"
            if spec.pace_limit_hours is not None:
                pace += f" (limit {spec.pace_limit_hours:g} h)"
        lines.append(pace)
    gpu = snap.gpu_hours
    if gpu is not None:
        line = f"GPU-hours {gpu:.2f}"
        if spec.gpu_hours is not None:
            line += f" of {spec.gpu_hours:g} gate"
        source = gpu_hours_source(snap.status)
        if source:
            line += f" ({esc(source)})"
        lines.append(line)
    settled = settled_text(snap.status) if spec.decided == "stop" else None  # unregistered, it decides nothing
    if settled:
        lines.append(esc(settled))
    # a file or a field the notifier cannot read is said, not shown as a blank figure
    lines.extend(f"unreadable: {esc(short(p, 200))}" for p in snap.problems[:5])
    return lines + comparison_lines(snap, said)


def _count_lines(snap: RunSnapshot, arm: str | None) -> list[str]:
    t = tally(snap.counts(arm))
    who = f"**{esc(arm)}**: " if arm else ""
    lines = [f"{who}successes **{t.successes}**{f'/{t.episodes}' if arm else ''} · knock-aways {t.knock_aways}"
             f" · engaged {t.engaged}"]
    if t.outcomes:
        lines.append("outcomes: " + " · ".join(f"{OUTCOME_LABELS[o]} {n}" for o, n in t.outcomes))
    zf = f"zero-fallbacks {t.zero_fallbacks}"
    if t.predicts:
        zf += f" ({100.0 * t.zero_fallbacks / t.predicts:.1f}% of {t.predicts:,} predicts)"
    validity = [zf]
    if t.reset_strikes:
        validity.append(f"reset strikes **{t.reset_strikes}** (must be 0)")
    if t.errors:
        validity.append(f"error rows **{t.errors}**")
    lines.append(" · ".join(validity))
    return lines


def _read_lines(snap: RunSnapshot) -> list[str]:
    """Rows read and not counted, said: a later row of a seed replaced an earlier one (the last
    counts), or a row's seed (or arm) is not in the plan."""
    out = []
    if snap.fold.duplicates:
        out.append(f"{snap.fold.duplicates} row(s) repeat a seed: the last row of each seed counts")
    if snap.fold.out_of_plan:
        out.append(f"{snap.fold.out_of_plan} row(s) of seeds not in the plan: not counted")
    if snap.fold.unreachable:
        out.append(f"{snap.fold.unreachable} seed(s) out of the SO-101's reach (reachable: false): counted apart, "
                   "not in the successes' k/n")
    return out


def comparison_lines(snap: RunSnapshot, said: str = "") -> list[str]:
    """A comparison run's lines: one line of the comparison's evidence (the driver's decision,
    status.json `comparison`, or the evidence so far), and once the run is over, the episodes the
    decision saved against the batch. [] for a one-arm run. The evidence is left out when `said`
    holds it already: a run its decision stopped gives the decision as its reason."""
    evidence = live_evidence(snap.manifest, snap.status, list(snap.rows))
    if evidence is None:
        return []
    out = [] if evidence in said else [f"comparison: {esc(short(evidence, 400))}"]
    saved = savings(snap.manifest, snap.status, list(snap.rows)) if snap.over else None
    if saved is not None:
        out.append(saved_line(saved))
    return out


def results_post(snap: RunSnapshot) -> Post:
    """The report's story (results.json's, from the verdict engine): its headline once, then what it rests on;
    a report from before the story: its reads and verdicts, then results.md shortened."""
    image = snap.chart_png if snap.chart_png and len(snap.chart_png) <= CHART_MAX_BYTES else None
    told = story_head(snap.results_json)
    if told is not None:
        head, title = told
        head = "\n".join([head, *published_lines(snap.results_json)])
        body = shorten_markdown(without_sections(snap.results_md or "", TOLD_ABOVE), DESCRIPTION_MAX - len(head) - 80)
        return _post(snap, RESULTS, RESULTS, title, f"Results · {snap.run_id}", f"{head}\n\n{body}", image=image)
    head, title, verdicts = report_head(snap.results_json)
    if head is None:  # a report from before results.json: the rows' tally
        t = tally(snap.all_counts())
        head = f"successes **{t.successes}/{snap.done}** · knock-aways {t.knock_aways} · engaged {t.engaged}"
        title = "results: " + _successes_words(snap, knock_aways=False) if snap.arms else \
            f"results: {t.successes}/{snap.done} successes"
    head = "\n".join([head, *verdicts, *published_lines(snap.results_json)])
    body = shorten_markdown(snap.results_md or "", DESCRIPTION_MAX - len(head) - 80)
    return _post(snap, RESULTS, RESULTS, title, f"Results · {snap.run_id}", f"{head}\n\n{body}", image=image)


def _due_update(snap: RunSnapshot, posted: set[str], every: int) -> Post | None:
    if every <= 0 or snap.done < every:
        return None
    milestone = (snap.done // every) * every
    if snap.total and milestone >= snap.total:
        return None  # the end posts speak for the last milestone
    sent = [int(k.split(":", 1)[1]) for k in posted if k.startswith(f"{UPDATE}:") and k.split(":", 1)[1].isdigit()]
    last = max(sent, default=0)
    if milestone <= last:
        return None
    post = update_post(snap, milestone)
    missed = list(range(last + every, milestone, every))
    if missed:
        post = catch_up(post, snap, missed)
    return post


def catch_up(post: Post, snap: RunSnapshot, missed: list[int]) -> Post:
    """The update with an explicit list of the milestones no notifier posted, each with its
    figures as they stood then (the fold notes every arm's at each milestone it passes)."""
    lines = []
    for m in missed:
        figures = snap.fold.milestones.get(m)
        if figures is None:
            lines.append(f"at {m}/{snap.total}")
        elif snap.arms:
            lines.append(f"at {m}/{snap.total}: " + " · ".join(
                f"{esc(str(arm))} successes {s}/{n}" for arm, n, s, _k, _e in figures))
        else:
            _arm, _n, s, k, e = figures[0]
            lines.append(f"at {m}/{snap.total}: successes {s} · knock-aways {k} · engaged {e}")
    if len(lines) > 20:  # a long absence: the first and last ten, and how many in between
        lines = [*lines[:10], f"… {len(lines) - 20} more …", *lines[-10:]]
    text = (f"{post.description}\n\n**caught up**: {len(missed)} earlier update(s) not posted when due "
            f"(no notifier was running or Discord was unreachable):\n" + "\n".join(lines))
    return replace(post, description=clip(text, DESCRIPTION_MAX),
                   covers=tuple(f"{UPDATE}:{m}" for m in missed))


def fold_into_end(end: Post, owed: list[Post]) -> Post:
    """An end post that also stands for the posts owed to its run while they could not be sent (Discord
    unreachable, the webhook gone), now that the run has ended: they are not sent one by one (a
    recovered webhook would flood the channel with launch, update:10, update:20, done within a
    second); the end post says so, marked late, and `covers` records them as posted."""
    if not owed:
        return end
    # neutral on why: Discord may have been unreachable, or the webhook refused them (deleted, then replaced)
    note = (f"late: this post stands for {plural(len(owed), 'earlier post')} not delivered when due "
            f"({', '.join(p.key for p in owed[:8])}{', …' if len(owed) > 8 else ''})")
    covers = tuple(dict.fromkeys([*end.covers, *(k for p in owed for k in (p.key, *p.covers))]))
    return replace(_late(end.with_note(note)), covers=covers)


def mark_late(post: Post, ended_s: float | None) -> Post:
    """An end post composed well after its run ended (the notifier was not running, or Discord was
    unreachable): it says when the run ended."""
    if ended_s is None or ended_s < LATE_S:
        return post
    return _late(post.with_note(f"late: the run ended {hours(ended_s)} before this post"))


def _late(post: Post) -> Post:
    """'late' right after the lead of the content line (what a lock screen shows), once."""
    if " · late · " in post.content:
        return post
    return replace(post, content=clip(post.content.replace(" · ", " · late · ", 1), CONTENT_MAX))


def _readings(snap: RunSnapshot):
    elapsed = snap.elapsed_s
    if elapsed is None:
        return []
    median = snap.fold.median_wall_s()
    return evaluate_gates(
        snap.gate_spec(), elapsed_s=elapsed, done=snap.done, total=snap.total, gpu_hours=snap.gpu_hours,
        heartbeat_age_s=snap.heartbeat_age_s, episode_walls_s=(median,) if median else (), live=snap.live,
        pace=PaceInputs.from_dict(snap.status.pace), gpus=num(snap.status.gpus),
        starting=snap.run_state.recorded == rd.STARTING,
    )


def _alerts(snap: RunSnapshot) -> list[Post]:
    """Tripwires seen live (gate readings), or named by the reason a run stopped."""
    out = []
    if snap.live:
        for r in _readings(snap):
            if r.state != TRIPPED:
                continue
            if r.name == "stall":
                out.append(_post(snap, STALL, f"{STALL}:{snap.done}", f"stall at {snap.done}/{snap.total}",
                                 f"Stall · {snap.run_id}", f"{r.message}\nat {snap.done}/{snap.total} episodes"))
            else:
                out.append(_tripwire(snap, r.name, r.message))
    elif snap.state == rd.STOPPED:
        stop = status_stop(snap.status) or rd.read_stop(snap.run_dir)
        if stop is not None and stop.by == rd.BY_GATE:
            out.append(_tripwire(snap, stop.gate or "gate", stop.detail))
    return out


def _tripwire(snap: RunSnapshot, gate: str, message: str) -> Post:
    return _post(snap, TRIPWIRE, f"{TRIPWIRE}:{gate}", f"tripwire: {gate} at {snap.done}/{snap.total}",
                 f"Tripwire · {gate} · {snap.run_id}",
                 f"{esc(short(message, 300))}\nat {snap.done}/{snap.total} episodes; "
                 "the driver stops at an episode boundary")


def _end_posts(snap: RunSnapshot, posted: set[str]) -> list[Post]:
    """stopped/failed with the reason; the frozen reads once results.md exists; until then a run
    that completed gets a `done` post with its counts (the report is run by hand, maybe later)."""
    out = []
    reason = _reason(snap) if snap.state in (rd.STOPPED, rd.FAILED) else ""
    summary = [f"**{snap.done}/{snap.total}** episodes", *progress_lines(snap, said=reason)]
    if snap.state in (rd.STOPPED, rd.FAILED):
        kind = snap.state
        verb = "stopped" if kind == rd.STOPPED else "failed"
        # up to 450: a decision that stopped the run is said here whole, and only here (progress_lines' `said`)
        text = "\n".join([f"reason: {esc(short(reason, 450))}" if reason else "reason: not given", *summary])
        text = "\n".join([text, *_tripwire_lines(snap, DESCRIPTION_MAX - len(text) - 1)])
        out.append(mark_late(_post(snap, kind, f"{kind}:{snap.done}", f"{verb} at {snap.done}/{snap.total}",
                                   f"{verb.capitalize()} · {snap.run_id}", text), snap.status_age_s))
    if snap.results_md is not None:
        out.append(results_post(snap))
    elif snap.state == rd.DONE and RESULTS not in posted:
        words = _successes_words(snap, knock_aways=False) if snap.arms else \
            f"{snap.counts().successes}/{snap.done} successes"
        out.append(mark_late(_post(snap, DONE, DONE, f"done: {words}", f"Done · {snap.run_id}",
                                   "\n".join([*summary, "*frozen reads not written yet: the report has not run*"])),
                         snap.status_age_s))
    return out


def _died_post(snap: RunSnapshot) -> Post:
    """The driver's process is gone without a final state (killed outside the console, the machine
    rebooted, out of memory): said once per episode count, with what to do."""
    age = snap.heartbeat_age_s
    text = "\n".join([
        "the driver's process is gone without writing a final state"
        + (f" (last heartbeat {hours(age)} ago)" if age is not None else ""),
        f"**{snap.done}/{snap.total}** episodes", *progress_lines(snap),
        f"the driver's log says why; `fontaine-eval --resume runs/{code(snap.run_dir.name)}` runs the rest"])
    return _post(snap, DIED, f"{DIED}:{snap.done}", f"died at {snap.done}/{snap.total}", f"Died · {snap.run_id}", text)


def _tripwire_lines(snap: RunSnapshot, room: int) -> list[str]:
    """A run stopped by its registered tripwires: each failing tripwire's joints, one short line a joint
    (tripwire_joint_lines: every joint, the gripper too, no 130-column table a phone cuts), at most
    `room` characters, cut at a line. A record without per-joint rows gives its failures' one-liners."""
    record = tripwire_record(snap.status, snap.manifest)
    if record is None or record.get("passed") is not False:
        return []
    lines = []
    for entry in record.get("arms") if isinstance(record.get("arms"), list) else ():
        reports = entry.get("reports") if isinstance(entry, dict) else None
        for name, report in (reports.items() if isinstance(reports, dict) else ()):
            if isinstance(report, dict) and report.get("passed") is False:
                arm = esc(short(entry.get("arm") or "?", 40))
                lines += [f"**{esc(short(name, 40))}** (arm {arm}): failed", *tripwire_joint_lines(name, report.get("joints"))]
    if not lines:
        failed = record.get("failed") if isinstance(record.get("failed"), list) else []
        lines = [esc(short(f, 300)) for f in failed if isinstance(f, str)]
    out = ["registered tripwires (before the first episode):"]
    for line in lines:
        if sum(len(x) + 1 for x in out) + len(line) + 2 > room:
            out.append("…")
            break
        out.append(line)
    return out if len(out) > 1 and sum(len(x) + 1 for x in out) <= room else []


def _post(snap: RunSnapshot, kind: str, key: str, content: str, title: str, description: str,
          image: bytes | None = None) -> Post:
    prereg_id = snap.manifest.prereg_id
    foot = ["fontaine", snap.run_id]
    if prereg_id:
        foot.append(str(prereg_id))
    foot.append(key)
    lead = f"{esc(snap.arm_label)} {snap.done}/{snap.total}"  # what a phone's lock screen shows first
    return Post(
        kind=kind, key=key, episodes=snap.done,
        content=clip(no_local_paths(f"{lead} · {content} · `{code(snap.run_id)}`"), CONTENT_MAX),
        title=clip(no_local_paths(title), TITLE_MAX),
        description=clip(no_local_paths(description), DESCRIPTION_MAX),
        footer=clip(" · ".join(foot), FOOTER_MAX), colour=COLOURS[kind], run_id=snap.run_id, image=image,
    )


def _reason(snap: RunSnapshot) -> str:
    reason = status_reason_text(snap.status)
    if not reason:
        stop = rd.read_stop(snap.run_dir)
        reason = stop.text() if stop else ""
    return reason

