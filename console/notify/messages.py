"""What Fontaine posts to Discord about a run, and when: pure functions over the run directory.

The owner follows a run in-channel (the seeds): a launch post, an update every ~10 episodes,
an alert when a tripwire or a stall trips, a post when the run stops or fails, a completion
post, and the frozen reads with the per-seed chart. Each post has a key that is stable for the
run, so whoever sends them can keep a ledger and never send one twice:

    launch            the run is live: prereg, arm, policy kind, (a model's) checkpoint + revision, decode,
                      dtype, convmap, seeds, episode budget, workers, gates (from the manifest
                      the driver writes: `policy` nested, `policy_resolved` for the revision)
    update:N          N = the latest multiple of every_episodes done; never at N >= total (the
                      end posts say it). Milestones missed while no notifier ran are not posted
                      one by one: update:N carries an explicit catch-up listing each missed
                      milestone with its figures (counted from the first M rows), and `covers`
                      names their keys so the ledger records them as posted
    tripwire:GATE     GATE = gpu_hours | pace | stall | gate; a live gate reading that tripped,
                      or the stop reason naming it
    stall:N           the heartbeat is stale while live, at N episodes done
    stopped:N, failed:N   the run ended early, with the reason and the counts
    done              completed, frozen reads not written yet (counts from the rows)
    results           results.md exists: the frozen reads, shortened, and chart.png attached

Phone-first: a post's one-line content (what a lock screen shows) leads with the arm and k/n;
the run id comes last. No absolute local path reaches a post (`no_local_paths`): the plan's id
and the run's name are enough.

Nothing here touches the network or writes a file; the sender (`console/notify/sender.py`)
decides when to call `due_posts` and delivers what it returns. Run states are prereg.rundir's.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from prereg import rundir as rd
from prereg.core.safe_read import CHART_MAX_BYTES, Unreadable, read_regular
from prereg.core.untrusted import redacted, shown
from prereg.core.vocabulary import DECODES, PLUGIN, POLICIES
from prereg.document.model import describe_tripwires
from prereg.outputs.publish import PUBLISHED_KEY, SPACE_KEY
from prereg.rundir.gates import TRIPPED, WARN, PaceInputs, evaluate_gates, projected_wall_s
from prereg.rundir.rows import ERROR, OUTCOME_LABELS, count_rows, number, read_rows
from prereg.rundir.status import GateSpec
from prereg.stats.comparison_report import live_evidence, savings
from prereg.stats.curtail import settled_text
from prereg.stats.reads import EXPLORATORY_HEAD

LAUNCH, UPDATE, TRIPWIRE, STALL, RESULTS, TEST = "launch", "update", "tripwire", "stall", "results", "test"
STOPPED, FAILED, DONE = rd.STOPPED, rd.FAILED, rd.DONE  # an end post's kind is the state the run ended in

# the policy kinds that load a model (a plugin: its entry point): only they have a checkpoint, decode, dtype, convmap
MODEL_KINDS = (*DECODES, "lerobot", PLUGIN)
MODEL_FACTS = ("checkpoint", "revision", "decode", "dtype", "convmap", "weights_sha256")

EVERY_EPISODES = 10  # an update every this many episodes
CATCH_UP_S = 6 * 3600.0  # a run that ended longer ago than this, never posted about, is owed nothing

# Discord's limits are 2000 characters of content, 4096 of embed description, 6000 of
# embeds in all; we stay well under so that a post reads at a glance on a phone.
CONTENT_MAX = 300
TITLE_MAX = 200
DESCRIPTION_MAX = 1800
FOOTER_MAX = 200
RESULTS_MD_MAX_BYTES = 4 * 1024 * 1024  # results.md: the report's words (the post shortens them to a few lines)
CHART_NAME = rd.CHART

_FIELD_MAX = {"content": CONTENT_MAX, "title": TITLE_MAX, "description": DESCRIPTION_MAX, "footer": FOOTER_MAX}

COLOURS = {
    LAUNCH: 0x3B82F6, UPDATE: 0x64748B, TRIPWIRE: 0xF97316, STALL: 0xF59E0B,
    STOPPED: 0xEAB308, FAILED: 0xDC2626, DONE: 0x16A34A, RESULTS: 0x16A34A, TEST: 0x8B5CF6,
}


@dataclass(frozen=True)
class Post:
    """One message, ready to render as content + one embed (+ the chart as an attachment)."""

    kind: str
    key: str  # stable within a run: the ledger's identity of this post
    episodes: int  # episodes done when the post was composed
    content: str  # one line: what a notification preview shows
    title: str
    description: str
    footer: str
    colour: int
    run_id: str | None = None
    image: bytes | None = field(default=None, repr=False)  # chart.png, shown via attachment://chart.png
    covers: tuple[str, ...] = ()  # keys of missed milestones this post lists (a catch-up)

    def __post_init__(self) -> None:
        """Every post's words pass here: what came from a run's files (an arm, a reason, a row's
        note) is never posted raw: a secret's shape is redacted and a control character shown
        escaped (`\\x1b`), whichever function composed the post; then cut to the field's length."""
        for name, limit in _FIELD_MAX.items():
            object.__setattr__(self, name, _clip(shown(getattr(self, name), keep="\n"), limit))

    def with_note(self, note: str) -> "Post":
        """The same post with a line of context added (a catch-up, a possible repeat)."""
        return replace(self, description=_clip(f"{self.description}\n*{note}*", DESCRIPTION_MAX))

    def as_text(self) -> str:
        """Plain-text fallback, for a post Discord rejected as malformed."""
        return _clip(f"{self.content}\n{self.title}\n{self.description}", 1900)


@dataclass(frozen=True)
class RunSnapshot:
    """What the run directory says at one moment: the contract's one read (`rd.read_snapshot`, typed
    and never blocking) with the rows and the report's files. `manifest` and `status` are typed (every
    field None when the file is missing or cannot be read: `present` says which were read);
    `problems` names what could not be read (a file, or a field of the wrong type)."""

    run_dir: Path
    manifest: rd.Manifest
    status: rd.Status
    rows: list[dict]
    results_md: str | None
    results_json: dict | None
    chart_png: bytes | None
    heartbeat_age_s: float | None
    status_age_s: float | None  # how long ago status.json last changed
    now: float
    present: tuple[str, ...] = ()  # which of manifest.json and status.json were read
    problems: tuple[str, ...] = ()  # 'status.json: elapsed_s is str 'x', not int or float', 'manifest.json: is a FIFO ...'

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.status.run_id or self.run_dir.name

    @property
    def state(self) -> str:
        """status.json's state; `unreadable` while status.json is there but holds no known state (random
        bytes, `[1, 2, 3]`, `"state": 5`): neither live nor over, so it gets no launch post, no stall
        alert and no end post. A run with a manifest and no status.json yet is starting."""
        if self.status.state in rd.STATES:
            return self.status.state
        if self.status_age_s is not None or any(p.startswith(rd.STATUS) for p in self.problems):
            return rd.UNREADABLE  # status.json is there (of whatever kind: a symlink loop too), its state unknown
        return rd.STARTING if rd.MANIFEST in self.present else rd.UNKNOWN

    @property
    def live(self) -> bool:
        return self.state in rd.LIVE_STATES

    @property
    def over(self) -> bool:
        return self.state in rd.FINAL_STATES

    @property
    def done(self) -> int:
        return max(self.status.done or 0, len(self.rows))

    @property
    def total(self) -> int:
        if self.status.total is not None:
            return self.status.total
        return len(self.manifest.seeds or ())

    @property
    def elapsed_s(self) -> float | None:
        return self.status.elapsed_s

    @property
    def gpu_hours(self) -> float | None:
        return self.status.gpu_hours

    def gate_spec(self) -> GateSpec:
        return self.manifest.gates


def read_snapshot(run_dir: Path, *, now: float | None = None, rows: list[dict] | None = None) -> RunSnapshot:
    """Read the run directory; `rows` lets a caller pass rows it has already read (a cache)."""
    run_dir = Path(run_dir)
    now = time.time() if now is None else now
    results = run_dir / rd.RESULTS
    chart = run_dir / CHART_NAME
    contract = rd.read_snapshot(run_dir)
    return RunSnapshot(
        run_dir=run_dir,
        manifest=contract.manifest or rd.Manifest(),
        status=contract.status or rd.Status(),
        rows=rows if rows is not None else read_rows(run_dir / rd.ROWS).rows,
        results_md=_read_text(results),
        results_json=read_json_object(run_dir / rd.RESULTS_JSON) if results.exists() else None,
        chart_png=_read_chart(chart) if results.exists() else None,
        heartbeat_age_s=rd.mtime_age_s(run_dir / rd.HEARTBEAT, now),
        status_age_s=rd.mtime_age_s(run_dir / rd.STATUS, now),
        now=now,
        present=tuple(name for name, doc in ((rd.MANIFEST, contract.manifest), (rd.STATUS, contract.status)) if doc is not None),
        problems=(*[line for line in contract.unreadable_lines if line.startswith((rd.MANIFEST, rd.STATUS))], *contract.problems),
    )


def due_posts(
    snap: RunSnapshot,
    posted: set[str],
    *,
    every_episodes: int = EVERY_EPISODES,
    catch_up_s: float = CATCH_UP_S,
) -> list[Post]:
    """The posts this run is owed now and that are not in `posted` (ledger + queue), in order.

    A run that was already over long ago and has never been posted about gets nothing: turning
    the webhook on must not flood the channel with last week's runs. While a run is live, only
    the latest missed update is owed (with a note), never one post per missed milestone; once
    it is over, the end posts replace the updates.
    """
    if not snap.present:
        return []
    if snap.over and not posted and (snap.status_age_s is None or snap.status_age_s > catch_up_s):
        return []
    out: list[Post] = []
    if snap.live and LAUNCH not in posted:
        out.append(launch_post(snap))
    if snap.live:
        update = _due_update(snap, posted, every_episodes)
        if update is not None:
            out.append(update)
    out.extend(p for p in _alerts(snap) if p.key not in posted)
    if snap.over:
        out.extend(p for p in _end_posts(snap, posted) if p.key not in posted)
    return out


def launch_post(snap: RunSnapshot) -> Post:
    """The launch, from the manifest as engine/driver.py writes it (the policy nested)."""
    m = snap.manifest
    lines = []
    prereg_id, sha = m.prereg_id, m.prereg_sha256
    if prereg_id or sha:
        lines.append(f"prereg **{_esc(prereg_id or '?')}**" + (f" (sha256 `{sha[:12]}`)" if sha else ""))
    pol = policy_facts(m)
    arm = m.arm or "?"
    arm_bits = [f"arm **{_esc(arm)}**", f"policy **{_esc(pol['kind'])}**"]
    lines.append(" · ".join(arm_bits))
    if pol.get("checkpoint"):
        ck = f"checkpoint `{_code(pol['checkpoint'])}`"
        ck += f" @ `{_code(pol['revision'])}`" if pol.get("revision") else " (revision: none recorded)"
        if pol.get("weights_sha256"):
            ck += f" · weights `{pol['weights_sha256'][:12]}`"
        lines.append(ck)
    bits = [f"{name} {_esc(_short(pol[name], 60))}" for name in ("decode", "dtype", "convmap") if pol.get(name)]
    if bits:
        lines.append(" · ".join(bits))
    seeds = list(m.seeds or ())
    proto = [f"{len(seeds) or snap.total} seeds" + (f" ({seed_span(seeds)})" if seeds else "")]
    secs = m.episode_seconds
    if secs is not None:
        proto.append(f"{secs:g} s episodes")
    workers = m.workers
    if workers:
        proto.append(f"{workers} workers")
    lines.append(" · ".join(proto))
    budget = f"budget: {snap.total} episodes"
    if secs is not None:
        budget += f" × {secs:g} s simulated"
    lines.append(budget)
    lines.append("gates: " + describe_gates(snap.gate_spec()))
    # the content line leads with the arm: the policy kind follows only when it says something more
    kind = f"{pol['kind']}" + (f" {pol['decode']}" if pol.get("decode") else "")
    what = "launched" + (f" · {kind}" if kind != arm else "")
    return _post(snap, LAUNCH, LAUNCH, what, f"Launch · {snap.run_id}", "\n".join(lines))


def policy_facts(m: "rd.Manifest | dict") -> dict:
    """kind, checkpoint, revision, decode, dtype, convmap (+ weights_sha256) from a manifest:
    `policy` as the driver writes it (a dict), `policy_resolved` for what it resolved to; the
    flat keys of older manifests are read too (prereg.rundir.Manifest). A checkpoint given as a local path shows only its
    last component. Only the facts the policy kind uses are given: the scripted oracle has no
    checkpoint, decode, dtype or convmap (a flag launch records the flags' defaults for them, a
    registered one does not), so they are None for it, whichever way it was launched."""
    m = rd.Manifest.of(m)
    pol = m.policy or {}
    res = m.policy_resolved or {}
    extra = pol.get("extra") if isinstance(pol.get("extra"), dict) else {}

    def first(*vals):
        return next((v for v in vals if v not in (None, "", {}, [])), None)

    convmap = first(pol.get("convmap"), res.get("convmap"))
    if isinstance(convmap, dict):
        convmap = convmap.get("name")
    out = {
        "kind": str(first(pol.get("kind"), res.get("policy")) or "?"),
        "checkpoint": first(pol.get("checkpoint"), res.get("checkpoint")),
        "revision": first(res.get("revision"), pol.get("revision"), extra.get("revision")),
        "decode": first(res.get("decode"), pol.get("decode")),
        "dtype": first(res.get("dtype"), pol.get("dtype")),
        "convmap": convmap,
        "weights_sha256": first(res.get("weights_sha256")),
    }
    if out["kind"] in POLICIES and out["kind"] not in MODEL_KINDS:  # a kind we know runs no model
        out.update(dict.fromkeys(MODEL_FACTS))
    for k, v in list(out.items()):
        if v is not None and k != "kind":
            out[k] = str(v)
    if out["checkpoint"] and (out["checkpoint"].startswith(("/", "~")) or "\\" in out["checkpoint"]):
        out["checkpoint"] = "…/" + out["checkpoint"].rstrip("/").rsplit("/", 1)[-1]
    return out


def update_post(snap: RunSnapshot, milestone: int) -> Post:
    lines = progress_lines(snap)
    warn = [r.message for r in _readings(snap) if r.state == WARN]
    lines.extend(f"warning: {w}" for w in warn)
    t = tally(snap.rows)
    return _post(snap, UPDATE, f"{UPDATE}:{milestone}",
                 f"{t.successes} successes · {t.knock_aways} knock-aways",
                 f"Update · {snap.run_id} · {snap.done}/{snap.total}", "\n".join(lines))


def progress_lines(snap: RunSnapshot) -> list[str]:
    """The counts an update reads: outcomes, validity, pace, GPU-hours."""
    t = tally(snap.rows)
    lines = [f"successes **{t.successes}** · knock-aways {t.knock_aways} · engaged {t.engaged}"]
    if t.outcomes:
        lines.append("outcomes: " + " · ".join(f"{OUTCOME_LABELS[o]} {n}" for o, n in t.outcomes))
    zf = f"zero-fallbacks {t.zero_fallbacks}"
    if t.predicts:
        zf += f" ({100.0 * t.zero_fallbacks / t.predicts:.1f}% of {t.predicts:,} predicts)"
    lines.append(zf)
    validity = []
    if t.reset_strikes:
        validity.append(f"reset strikes **{t.reset_strikes}** (must be 0)")
    if t.errors:
        validity.append(f"error rows **{t.errors}**")
    if validity:
        lines.append(" · ".join(validity))
    spec = snap.gate_spec()
    elapsed, done, total = snap.elapsed_s, snap.done, snap.total
    if elapsed is not None and done > 0:
        proj = snap.status.projected_wall_s or projected_wall_s(elapsed, done, total)
        pace = f"pace {elapsed / done:.0f} s/episode"
        if proj is not None:
            pace += f" · projected wall {_hours(proj)}"
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
            line += f" ({_esc(source)})"
        lines.append(line)
    settled = settled_text(snap.status)
    if settled:
        lines.append(_esc(settled))
    # a file or a field the notifier cannot read is said, not shown as a blank figure
    lines.extend(f"unreadable: {_esc(_short(p, 200))}" for p in snap.problems[:5])
    return lines + comparison_lines(snap)


def comparison_lines(snap: RunSnapshot) -> list[str]:
    """A comparison run's lines: each arm's successes, one line of the comparison's evidence (the
    driver's decision, status.json `comparison`, or the evidence so far), and once the run is over,
    the episodes the decision saved against the batch. [] for a one-arm run."""
    evidence = live_evidence(snap.manifest, snap.status, snap.rows)
    if evidence is None:
        return []
    arms = snap.manifest.arms
    per_arm = " · ".join(f"{_esc(a)} {tally([r for r in snap.rows if r.get('arm') == a]).successes}/"
                         f"{len({r.get('seed') for r in snap.rows if r.get('arm') == a})}" for a in arms)
    out = [f"successes by arm: {per_arm}", f"comparison: {_esc(_short(evidence, 400))}"]
    saved = savings(snap.manifest, snap.status, snap.rows) if snap.over else None
    if saved is not None:
        out.append(_saved_line(*saved[1:]))
    return out


def _saved_line(run: int, batch: int, saved: int) -> str:
    return f"episodes saved against the batch: **{saved}** ({run} run of {batch}: max seeds x 2 arms)"


def gpu_hours_source(status: "rd.Status | dict") -> str | None:
    """What the GPU-hours figure is, in words: the driver's `gpu_hours_source` ('allocated (wall x
    1 GPU held)'), or 'no GPU held' when the run holds none (the driver's words would read
    'allocated (wall x 0 GPUs held)' beside 0.00)."""
    status = rd.Status.of(status)
    if status.gpus == 0:
        return "no GPU held"
    return status.gpu_hours_source or None


def results_post(snap: RunSnapshot) -> Post:
    """The report's own reads and verdicts (results.json, from the verdict engine), then results.md shortened."""
    head, title, verdicts = _report_head(snap.results_json)
    if head is None:  # a report from before results.json: the rows' tally
        t = tally(snap.rows)
        head = f"successes **{t.successes}/{snap.done}** · knock-aways {t.knock_aways} · engaged {t.engaged}"
        title = f"results: {t.successes}/{snap.done} successes"
    head = "\n".join([head, *verdicts, *_published_lines(snap.results_json)])
    body = shorten_markdown(snap.results_md or "", DESCRIPTION_MAX - len(head) - 80)
    image = snap.chart_png if snap.chart_png and len(snap.chart_png) <= CHART_MAX_BYTES else None
    return _post(snap, RESULTS, RESULTS, title, f"Results · {snap.run_id}", f"{head}\n\n{body}", image=image)


def _comparison_head(res: dict | None) -> tuple[str, str, list[str]] | None:
    """_report_head of a comparison run's results.json (`comparison` and `arms`): the decision and the
    episodes it saved against the batch, then each arm's primary read and validity; None otherwise."""
    c = res.get("comparison") if isinstance(res, dict) else None
    arms = res.get("arms") if isinstance(res, dict) else None
    if not isinstance(c, dict) or not isinstance(arms, dict):
        return None
    nums = [c.get(k) for k in ("episodes_run", "batch_episodes", "episodes_saved")]
    head = [f"comparison: **{_esc(_short(c.get('text') or c.get('outcome') or 'no decision', 400))}**"]
    if all(type(n) is int for n in nums):
        head.append(_saved_line(*nums))
    for arm, a in list(arms.items())[:2]:
        p = a.get("primary") if isinstance(a, dict) else None
        if isinstance(p, dict) and type(p.get("successes")) is int and type(p.get("n")) is int:
            valid = "VALID" if a.get("valid") is True else "**INVALID**"
            of = f" (of {p['n_planned']} planned)" if type(p.get("n_planned")) is int else ""
            head.append(f"{_esc(_short(arm, 40))}: successes **{p['successes']}/{p['n']}**{of} · {valid}")
    if c.get("after_anytime_valid_stop"):
        head.append("*the arms' counts are read after an anytime-valid stop: fixed-n numbers on the episodes run*")
    outcome = str(c.get("outcome") or "no decision")
    saved = f" · {nums[2]} episodes saved" if type(nums[2]) is int and nums[2] else ""
    return "\n".join(head), f"results: {_esc(_short(outcome, 60))}{saved}", _verdict_lines(res)


def _report_head(res: dict | None) -> tuple[str | None, str, list[str]]:
    """(head line, content line, one line per verdict) from results.json; (None, "", []) when it is not usable."""
    comparison = _comparison_head(res)
    if comparison is not None:
        return comparison
    p = res.get("primary") if isinstance(res, dict) else None
    if not isinstance(p, dict) or not all(type(p.get(k)) is int for k in ("successes", "n")):
        return None, "", []
    k, n = p["successes"], p["n"]
    valid = "VALID" if res.get("valid") is True else "**INVALID**"
    why = res.get("invalid_because")
    if res.get("valid") is not True and isinstance(why, list) and why:
        valid += f" ({_esc(_short(why[0], 120))})"
    head = (f"successes **{_esc(_short(p.get('text') or f'{k} / {n}', 120))}** · knock-aways {_num(res.get('knock_aways'))}"
            f" · engaged {_num(res.get('engaged'))} · {valid}")
    return head, f"results: {k}/{n} successes", _verdict_lines(res)


def _verdict_lines(res: dict) -> list[str]:
    """One line per verdict and per sequential test of results.json (a one-arm run's or a comparison run's)."""
    lines = []
    for v in (res.get("verdicts") or [])[:8]:
        if isinstance(v, dict) and isinstance(v.get("label"), str) and isinstance(v.get("condition"), str):
            label = EXPLORATORY_HEAD if v.get("exploratory") is True else v["label"]  # its why is on the page
            lines.append(f"[{_esc(_short(label, 120))}] `{_short(v['condition'], 100)}`")
    for s in (res.get("sequential_tests") or [])[:4]:
        if isinstance(s, dict) and isinstance(s.get("label"), str):
            lines.append(f"[{_esc(_short(s['label'], 120))}] sequential test")
    return lines


def _published_lines(res: dict | None) -> list[str]:
    """Links to the published results (`fontaine-prereg publish`), when there are: the page on the reports
    Space first (results.json's `published_space`), then the dataset's files (`published`)."""
    space = res.get(SPACE_KEY) if isinstance(res, dict) else None
    page = []
    if isinstance(space, dict) and _is_url(space.get("page_url")):
        page.append(f"page: [the results, on {_esc(_short(str(space.get('repo') or 'the Space'), 80))}]({space['page_url']})")
    pub = res.get(PUBLISHED_KEY) if isinstance(res, dict) else None
    if not isinstance(pub, dict) or not _is_url(pub.get("folder_url")):
        return page
    commit = pub.get("commit") if isinstance(pub.get("commit"), str) else ""
    line = f"published: [rows, chart, results]({pub['folder_url']})" + (f" · commit `{_code(commit[:12])}`" if commit else "")
    videos = pub.get("videos") if isinstance(pub.get("videos"), dict) else {}
    links = [f"[seed {_esc(_short(str(s), 12))}]({u})" for s, u in list(videos.items())[:10] if _is_url(u)]
    if links:
        line += " · videos " + " ".join(links) + (f" (+{len(videos) - 10})" if len(videos) > 10 else "")
    return [*page, line]


def _is_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://")) and len(value) < 400 and not any(
        c.isspace() or c in "()<>" for c in value)


def make_test_post(host: str, at: str) -> Post:
    return Post(TEST, f"{TEST}:{at}", 0, "Fontaine test post", "Test post",
                f"Sent from `{_esc(host)}` at {at}. If you can read this, the webhook works.",
                "fontaine · test", COLOURS[TEST])


@dataclass(frozen=True)
class Tally:
    successes: int = 0
    knock_aways: int = 0
    engaged: int = 0
    zero_fallbacks: int = 0
    predicts: int = 0
    reset_strikes: int = 0
    errors: int = 0
    outcomes: tuple[tuple[str, int], ...] = ()  # (episode outcome, rows), the ones seen, errors apart


def tally(rows: list[dict]) -> Tally:
    """Counts over rows, by `prereg.rundir.rows.RowCounts`: the same counts as the console and the report."""
    c = count_rows(rows)
    outcomes = tuple((o, n) for o, n in c.by_outcome.items() if n and o != ERROR)
    return Tally(c.successes, c.knock_aways, c.engaged, c.zero_fallbacks, c.predicts, c.reset_strikes, c.errors,
                 outcomes)


def describe_gates(spec: GateSpec) -> str:
    bits = []
    if spec.gpu_hours is not None:
        bits.append(f"GPU-hours ≤ {spec.gpu_hours:g}")
    if spec.pace_limit_hours is not None:
        bits.append(f"projected wall ≤ {spec.pace_limit_hours:g} h (judged after {spec.pace_after_episodes} episodes)")
    if getattr(spec, "decided", None) == "stop":
        bits.append("stops once its decision rules are settled")
    tripwires = describe_tripwires(getattr(spec, "tripwires", None))
    if tripwires:
        bits.append(tripwires)
    return " · ".join(bits) or "none"


def seed_span(seeds: list) -> str:
    """'0–99' for a contiguous range, else the first few seeds."""
    ints = [s for s in seeds if isinstance(s, int)]
    if ints and len(ints) == len(seeds) and ints == list(range(ints[0], ints[0] + len(ints))):
        return f"{ints[0]}–{ints[-1]}" if len(ints) > 1 else str(ints[0])
    head = ", ".join(str(s) for s in seeds[:8])
    return head + (", …" if len(seeds) > 8 else "")


def shorten_markdown(text: str, limit: int) -> str:
    """results.md made readable in an embed: headings bold, tables as ' · ' lines, clipped at a line."""
    out = []
    for raw in text.strip().splitlines():
        line = raw.rstrip()
        if re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", line) and "-" in line:
            continue  # a table's separator row
        m = re.match(r"^#{1,6}\s+(.*)", line)
        if m:
            line = f"**{m.group(1).strip()}**"
        elif line.lstrip().startswith("|"):
            line = " · ".join(c.strip() for c in line.strip().strip("|").split("|"))
        if line or (out and out[-1]):
            out.append(line)
    note = "\n… (shortened: the full reads are in results.md)"
    kept, size = [], 0
    for line in out:
        if size + len(line) + 1 > limit - len(note):
            return "\n".join(kept).rstrip() + note
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).rstrip()


# --- helpers -------------------------------------------------------------------------------


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
    figures as they stood then (the first M rows, in the order the driver wrote them)."""
    lines = []
    for m in missed:
        t = tally(snap.rows[:m])
        lines.append(f"at {m}/{snap.total}: successes {t.successes} · knock-aways {t.knock_aways} · engaged {t.engaged}")
    if len(lines) > 20:  # a long absence: the first and last ten, and how many in between
        lines = [*lines[:10], f"… {len(lines) - 20} more …", *lines[-10:]]
    text = (f"{post.description}\n\n**caught up**: {len(missed)} earlier update(s) not posted when due "
            f"(no notifier was running or Discord was unreachable):\n" + "\n".join(lines))
    return replace(post, description=_clip(text, DESCRIPTION_MAX),
                   covers=tuple(f"{UPDATE}:{m}" for m in missed))


def _readings(snap: RunSnapshot):
    elapsed = snap.elapsed_s
    if elapsed is None:
        return []
    walls = [w for w in (_num(r.get("wall_s")) for r in snap.rows) if w is not None]
    return evaluate_gates(
        snap.gate_spec(), elapsed_s=elapsed, done=snap.done, total=snap.total, gpu_hours=snap.gpu_hours,
        heartbeat_age_s=snap.heartbeat_age_s, episode_walls_s=walls, live=snap.live,
        pace=PaceInputs.from_dict(snap.status.pace), gpus=_num(snap.status.gpus),
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
        stop = rd.status_stop(snap.status) or rd.read_stop(snap.run_dir)
        if stop is not None and stop.by == rd.BY_GATE:
            out.append(_tripwire(snap, stop.gate or "gate", stop.detail))
    return out


def _tripwire(snap: RunSnapshot, gate: str, message: str) -> Post:
    return _post(snap, TRIPWIRE, f"{TRIPWIRE}:{gate}", f"tripwire: {gate} at {snap.done}/{snap.total}",
                 f"Tripwire · {gate} · {snap.run_id}",
                 f"{_esc(_short(message, 300))}\nat {snap.done}/{snap.total} episodes; "
                 "the driver stops at an episode boundary")


def _end_posts(snap: RunSnapshot, posted: set[str]) -> list[Post]:
    """stopped/failed with the reason; the frozen reads once results.md exists; until then a run
    that completed gets a `done` post with its counts (the report is run by hand, maybe later)."""
    out = []
    summary = [f"**{snap.done}/{snap.total}** episodes", *progress_lines(snap)]
    if snap.state in (rd.STOPPED, rd.FAILED):
        reason = _reason(snap)
        kind = snap.state
        verb = "stopped" if kind == rd.STOPPED else "failed"
        text = "\n".join([f"reason: {_esc(_short(reason, 300))}" if reason else "reason: not given", *summary])
        text = "\n".join([text, *_tripwire_table_lines(snap, DESCRIPTION_MAX - len(text) - 1)])
        out.append(_post(snap, kind, f"{kind}:{snap.done}", f"{verb} at {snap.done}/{snap.total}",
                         f"{verb.capitalize()} · {snap.run_id}", text))
    if snap.results_md is not None:
        out.append(results_post(snap))
    elif snap.state == rd.DONE and RESULTS not in posted:
        t = tally(snap.rows)
        out.append(_post(snap, DONE, DONE, f"done: {t.successes}/{snap.done} successes", f"Done · {snap.run_id}",
                         "\n".join([*summary, "*frozen reads not written yet (results.md)*"])))
    return out


def _tripwire_table_lines(snap: RunSnapshot, room: int) -> list[str]:
    """A run stopped by its registered tripwires: the failing tripwires' per-joint tables (notes left
    out) as a code block of at most `room` characters, cut at a line."""
    passed, table = rd.tripwire_table(snap.status, snap.manifest)
    if passed is not False or not table:
        return []
    keep, lines = False, []
    for line in table.splitlines():
        if line.startswith("registered tripwires, arm "):
            lines.append(line)
            continue
        if line.startswith("tripwire "):
            keep = line.rstrip().endswith("FAIL")
        if keep and not line.lstrip().startswith("note:"):
            lines.append(line)
    head, fence = "registered tripwires (before the first episode):", "```"
    budget = room - len(head) - 2 * len(fence) - 8
    out: list[str] = []
    for line in lines:
        if sum(len(x) + 1 for x in out) + len(line) + 1 > budget:
            out.append("…")
            break
        out.append(line)
    if budget <= 0 or not out:
        return []
    return [head, fence, "\n".join(out).replace("`", "'"), fence]


def _post(snap: RunSnapshot, kind: str, key: str, content: str, title: str, description: str,
          image: bytes | None = None) -> Post:
    prereg_id = snap.manifest.prereg_id
    foot = ["fontaine", snap.run_id]
    if prereg_id:
        foot.append(str(prereg_id))
    foot.append(key)
    arm = snap.manifest.arm or snap.status.arm or "?"
    lead = f"{_esc(arm)} {snap.done}/{snap.total}"  # what a phone's lock screen shows first
    return Post(
        kind=kind, key=key, episodes=snap.done,
        content=_clip(no_local_paths(f"{lead} · {content} · `{_code(snap.run_id)}`"), CONTENT_MAX),
        title=_clip(no_local_paths(title), TITLE_MAX),
        description=_clip(no_local_paths(description), DESCRIPTION_MAX),
        footer=_clip(" · ".join(foot), FOOTER_MAX), colour=COLOURS[kind], run_id=snap.run_id, image=image,
    )


_ABS_PATH = re.compile(r"(?<![\w.:/~\\-])(?:\\?~/|/)(?:[\w.@+\\-]+/)*[\w.@+\\-]+/?")  # \ : markdown escapes


def no_local_paths(text: str) -> str:
    """Absolute local paths (`/home/…/x`, `~/…/x`) replaced by their last component: a post
    never tells the channel how this machine's disk is laid out. URLs are left alone."""
    def short(m: re.Match) -> str:
        path = m.group(0)
        if path.count("/") < 2 and not path.startswith("~"):
            return path  # '/s', '1/2' and the like are not paths
        return "…/" + path.rstrip("/").rsplit("/", 1)[-1]

    return _ABS_PATH.sub(short, text)


def _reason(snap: RunSnapshot) -> str:
    reason = rd.status_reason_text(snap.status)
    if not reason:
        stop = rd.read_stop(snap.run_dir)
        reason = stop.text() if stop else ""
    return reason


def read_json_object(path: Path) -> dict:
    """A JSON file's object, or {} when it is missing, unreadable or not an object."""
    return rd.read_json(path) or {}


def _read_text(path: Path) -> str | None:
    """results.md, bounded and never blocking (a FIFO there is no text, not a hang)."""
    try:
        return read_regular(path, RESULTS_MD_MAX_BYTES).decode("utf-8", errors="replace")
    except (OSError, Unreadable):  # missing; a FIFO, a directory, a loop, too big
        return None


def _read_chart(path: Path) -> bytes | None:
    try:
        return read_regular(path, CHART_MAX_BYTES)
    except (OSError, Unreadable):
        return None


def _num(v: object) -> float | None:
    """A finite number from a file someone else wrote; None (unknown) for a string, a bool, NaN or infinity."""
    return number(v)


def _count(v: object) -> str:
    return str(v) if type(v) is int else "?"


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def _short(v: object, n: int) -> str:
    s = str(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _esc(s: str) -> str:
    """Escape Discord markdown in names that come from files (run ids, arms, reasons), a secret's
    shape redacted first (escaped, `hf\\_...` would no longer look like a token to `Post`'s check)."""
    return re.sub(r"([\\*_~`|>])", r"\\\1", redacted(s))


def _code(s: str) -> str:
    return redacted(s).replace("`", "'")
