"""How Fontaine words a Discord post: the post itself (`Post`), its limits, and the texts every post
is built from (a policy's facts, the gates, the report's head, markdown shortened, names escaped).

Phone-first: a post's one-line content (what a lock screen shows) leads with the arm (a comparison
run's two arms) and k/n; the run id comes last. No absolute local path reaches a post
(`no_local_paths`): the plan's id and the run's name are enough. Nothing here reads a file; which
posts a run is owed, and when, is console/notify/messages.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from prereg import rundir as rd
from prereg.core.untrusted import redacted, shown
from prereg.core.vocabulary import DECODES, PLUGIN, POLICIES
from prereg.core.words import clip_words
from prereg.document.model import describe_tripwires
from prereg.outputs.publish import PUBLISHED_KEY, SPACE_KEY, video_words
from prereg.outputs.report_markdown import HEADLINE
from prereg.rundir.rows import number
from prereg.rundir.status import GateSpec
from prereg.stats.reads import EXPLORATORY_HEAD
from prereg.stats.story import INVALID, Story, VariantStory

LAUNCH, UPDATE, TRIPWIRE, STALL, RESULTS, TEST = "launch", "update", "tripwire", "stall", "results", "test"
REAL_TRIALS = "real"  # every ~10 real trials recorded in real.jsonl (the console's real session, an import)
STOPPED, FAILED, DONE = rd.STOPPED, rd.FAILED, rd.DONE  # an end post's kind is the state the run ended in
DIED = rd.DIED  # the driver's process is gone without a final state
END_KINDS = (STOPPED, FAILED, DONE, DIED, RESULTS)  # what a run that has ended is owed

# the policy kinds that load a model (a plugin: its entry point): only they have a checkpoint, decode, dtype, convmap
MODEL_KINDS = (*DECODES, "lerobot", PLUGIN)
MODEL_FACTS = ("checkpoint", "revision", "decode", "dtype", "convmap", "weights_sha256")

# Discord's limits are 2000 characters of content, 4096 of embed description, 6000 of
# embeds in all; we stay well under so that a post reads at a glance on a phone.
CONTENT_MAX = 300
TITLE_MAX = 200
DESCRIPTION_MAX = 1800
FOOTER_MAX = 200
CHART_NAME = rd.CHART

_FIELD_MAX = {"content": CONTENT_MAX, "title": TITLE_MAX, "description": DESCRIPTION_MAX, "footer": FOOTER_MAX}

COLOURS = {
    LAUNCH: 0x3B82F6, UPDATE: 0x64748B, TRIPWIRE: 0xF97316, STALL: 0xF59E0B,
    STOPPED: 0xEAB308, FAILED: 0xDC2626, DIED: 0xB91C1C, DONE: 0x16A34A, RESULTS: 0x16A34A, TEST: 0x8B5CF6,
    REAL_TRIALS: 0x0EA5E9,
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
            object.__setattr__(self, name, clip(shown(getattr(self, name), keep="\n"), limit))

    def with_note(self, note: str) -> "Post":
        """The same post with a line of context added (a catch-up, a possible repeat)."""
        return replace(self, description=clip(f"{self.description}\n*{note}*", DESCRIPTION_MAX))

    def as_text(self) -> str:
        """Plain-text fallback, for a post Discord rejected as malformed."""
        return clip(f"{self.content}\n{self.title}\n{self.description}", 1900)


def policy_facts(m: "rd.Manifest | dict", arm: str | None = None) -> dict:
    """kind, checkpoint, revision, decode, dtype, convmap (+ weights_sha256) from a manifest:
    `policy` as the driver writes it (a dict), `policy_resolved` for what it resolved to; the
    flat keys of older manifests are read too (prereg.rundir.Manifest). `arm`: one arm of a
    comparison run (its entry in `arms`, its part of `policy_resolved`). A checkpoint given as a
    local path shows only its last component. Only the facts the policy kind uses are given: the
    scripted oracle has no checkpoint, decode, dtype or convmap (a flag launch records the flags'
    defaults for them, a registered one does not), so they are None for it, whichever way it was launched."""
    m = rd.Manifest.of(m)
    pol, res = m.policy or {}, m.policy_resolved or {}
    if arm is not None:
        entry = next((a for a in m.raw.get("arms") or () if isinstance(a, dict) and a.get("arm") == arm), {})
        pol = entry.get("policy") if isinstance(entry.get("policy"), dict) else {}
        res = res.get(arm) if isinstance(res.get(arm), dict) else {}
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


def saved_line(words: str) -> str:
    """The comparison's cost against the batch (prereg.stats.comparison_report.savings_words), as a post says it."""
    return f"cost: {esc(short(words, 200))}"


def comparison_head(res: dict | None) -> tuple[str, str, list[str]] | None:
    """_report_head of a comparison run's results.json (`comparison` and `arms`): the decision and the
    episodes it saved against the batch, then each arm's primary read and validity; None otherwise."""
    c = res.get("comparison") if isinstance(res, dict) else None
    arms = res.get("arms") if isinstance(res, dict) else None
    if not isinstance(c, dict) or not isinstance(arms, dict):
        return None
    nums = [c.get(k) for k in ("episodes_run", "batch_episodes", "episodes_saved")]
    head = [f"comparison: **{esc(short(c.get('text') or c.get('outcome') or 'no decision', 400))}**"]
    if isinstance(c.get("savings_text"), str):
        head.append(saved_line(c["savings_text"]))
    for arm, a in list(arms.items())[:2]:
        p = a.get("primary") if isinstance(a, dict) else None
        if isinstance(p, dict) and type(p.get("successes")) is int and type(p.get("n")) is int:
            valid = "VALID" if a.get("valid") is True else "**INVALID**"
            of = f" (of {p['n_planned']} planned)" if type(p.get("n_planned")) is int else ""
            head.append(f"{esc(short(arm, 40))}: successes **{p['successes']}/{p['n']}**{of} · {valid}")
    if c.get("after_anytime_valid_stop"):
        head.append("*the arms' counts are read after an anytime-valid stop: fixed-n numbers on the episodes run*")
    saved = f" · {nums[2]} episodes saved" if type(nums[2]) is int and nums[2] else ""
    return "\n".join(head), f"results: {esc(short(decision_words(c), 80))}{saved}", verdict_lines(res)


def decision_words(c: dict) -> str:
    """A comparison's decision naming its arms ('steady better than clumsy'), from results.json's
    `comparison`: its text up to 'at k/n seeds', else its outcome code."""
    text = c.get("text")
    if isinstance(text, str) and text:
        return text.split(" at ", 1)[0]
    return str(c.get("outcome") or "no decision")


def variant_lines(story: VariantStory, with_arm: bool = False) -> list[str]:
    """A crossed design's read in a post (issue 48), compactly: each variant's k/n, marked as the story marks
    them (the variant the decision reads, a camera variant read apart), then the pooled rate with its
    interval (VariantStory.pooled_words) and the worst variant. The same words live and from the report."""
    who = f"**{esc(short(story.arm, 40))}** " if with_arm else ""
    cells = [f"{esc(short(c.variant, 40))} {c.successes}/{c.n}" + (f" ({story.tag(c)})" if story.tag(c) else "")
             for c in story.cells[:12]]
    more = f" · … {len(story.cells) - 12} more" if len(story.cells) > 12 else ""
    worst = f" · worst {esc(short(story.worst, 40))}" if story.worst else ""
    return [f"{who}variants: {' · '.join(cells)}{more}", f"{who}{esc(story.pooled_words())}{worst}"]


def story_head(res: dict | None) -> tuple[str, str] | None:
    """(the post's head, its content line) from results.json's story (prereg/stats/story.py): the headline once,
    in bold, then what it rests on, each said once; None for a report without one (an older report)."""
    story = Story.from_dict(res.get("story") if isinstance(res, dict) else None)
    if story is None:
        return None
    lines = [f"**{esc(short(story.headline, 400))}**"]
    lines += [esc(short(a.line(), 200)) for a in story.arms]
    if story.cost:
        lines.append(saved_line(story.cost))
    if story.validity == INVALID:
        lines += [f"not VALID: {esc(short(why, 200))}" for why in story.reasons[:4]]
    lines += [f"· {esc(short(r.said, 160))} *(descriptive: the plan decides by its registered comparison)*"
              for r in story.descriptive[:4]]
    lines += [f"real trials, {esc(short(r.arm, 40))}: {esc(short(r.sentence, 300))}" for r in story.real[:4]]
    lines += [line for v in story.variants[:4] for line in variant_lines(v, len(story.variants) > 1)]
    if isinstance(res, dict) and isinstance(res.get("comparison"), dict) and res["comparison"].get("after_anytime_valid_stop"):
        lines.append("*the arms' counts are read after an anytime-valid stop: fixed-n numbers on the episodes run*")
    count = f"{story.arms[0].count_words(planned=False)} · " if len(story.arms) == 1 else ""
    return "\n".join(lines), f"results: {count}{esc(short(story.verdict, 160))}"


def report_head(res: dict | None) -> tuple[str | None, str, list[str]]:
    """(head line, content line, one line per verdict) from results.json; (None, "", []) when it is not usable."""
    comparison = comparison_head(res)
    if comparison is not None:
        return comparison
    p = res.get("primary") if isinstance(res, dict) else None
    if not isinstance(p, dict) or not all(type(p.get(k)) is int for k in ("successes", "n")):
        return None, "", []
    k, n = p["successes"], p["n"]
    valid = "VALID" if res.get("valid") is True else "**INVALID**"
    why = res.get("invalid_because")
    if res.get("valid") is not True and isinstance(why, list) and why:
        valid += f" ({esc(short(why[0], 120))})"
    head = (f"successes **{esc(short(p.get('text') or f'{k} / {n}', 120))}** · knock-aways {count_text(res.get('knock_aways'))}"
            f" · engaged {count_text(res.get('engaged'))} · {valid}")
    return head, f"results: {k}/{n} successes", verdict_lines(res)


def verdict_lines(res: dict) -> list[str]:
    """One line per verdict and per sequential test of results.json (a one-arm run's or a comparison run's)."""
    lines = []
    for v in (res.get("verdicts") or [])[:8]:
        if isinstance(v, dict) and isinstance(v.get("label"), str) and isinstance(v.get("condition"), str):
            label = EXPLORATORY_HEAD if v.get("exploratory") is True else v["label"]  # its why is on the page
            lines.append(f"[{esc(short(label, 120))}] `{short(v['condition'], 100)}`")
    for s in (res.get("sequential_tests") or [])[:4]:
        if isinstance(s, dict) and isinstance(s.get("label"), str):
            lines.append(f"[{esc(short(s['label'], 120))}] sequential test")
    return lines


def published_lines(res: dict | None) -> list[str]:
    """Links to the published results (`fontaine-prereg publish`), when there are: the page on the reports
    Space first (results.json's `published_space`), then the dataset's files (`published`)."""
    space = res.get(SPACE_KEY) if isinstance(res, dict) else None
    page = []
    if isinstance(space, dict) and is_url(space.get("page_url")):
        page.append(f"page: [the results, on {esc(short(str(space.get('repo') or 'the Space'), 80))}]({space['page_url']})")
    pub = res.get(PUBLISHED_KEY) if isinstance(res, dict) else None
    if not isinstance(pub, dict) or not is_url(pub.get("folder_url")):
        return page
    commit = pub.get("commit") if isinstance(pub.get("commit"), str) else ""
    line = f"published: [rows, chart, results]({pub['folder_url']})" + (f" · commit `{code(commit[:12])}`" if commit else "")
    videos = pub.get("videos") if isinstance(pub.get("videos"), dict) else {}
    links = [f"[{esc(short(video_words(str(s)), 60))}]({u})" for s, u in list(videos.items())[:10] if is_url(u)]
    if links:
        line += " · videos " + " ".join(links) + (f" (+{len(videos) - 10})" if len(videos) > 10 else "")
    return [*page, line]


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://")) and len(value) < 400 and not any(
        c.isspace() or c in "()<>" for c in value)


def make_test_post(host: str, at: str) -> Post:
    return Post(TEST, f"{TEST}:{at}", 0, "Fontaine test post", "Test post",
                f"Sent from `{esc(host)}` at {at}. If you can read this, the webhook works.",
                "fontaine · test", COLOURS[TEST])


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


def describe_stall(spec: GateSpec) -> str:
    """The stall check every run gets, registered or launched by flags (prereg.rundir.gates: the stall
    limit, and start-up's own limit), in words."""
    return (f"a stall is posted when the heartbeat is older than {spec.stall_factor:g} × the median episode"
            f" (at least {spec.stall_min_s:g} s), or {hours(spec.startup_limit_s)} while starting")


_JOINT_STATUS = {"pass": "ok", "fail": "**FAIL**", "warn": "warn", "info": "not judged"}


def tripwire_joint_lines(tripwire: str, joints: object) -> list[str]:
    """A registered tripwire's per-joint rows (the record's `reports[name].joints`) one short line a
    joint, the gripper too, readable on a phone: 'wrist\\_roll **FAIL** · 54% uncovered', its why on
    the line below. A row another writer left malformed is skipped, never a crash."""
    out = []
    for row in joints if isinstance(joints, list) else ():
        if not isinstance(row, dict) or not isinstance(row.get("joint"), str):
            continue
        line = f"{esc(short(row['joint'], 30))} {_JOINT_STATUS.get(row.get('status'), esc(short(row.get('status'), 12)))}"
        uncovered, delta, limit = num(row.get("uncovered")), num(row.get("delta_deg")), num(row.get("limit_deg"))
        if tripwire == "coverage" and uncovered is not None:
            line += f" · {uncovered:.0%} uncovered"
        elif delta is not None:
            line += f" · first action moves {delta:.1f}°" + (f" (limit {limit:.1f}°)" if limit is not None else "")
        out.append(line)
        judged_ok = _JOINT_STATUS.get(row.get("status")) == "ok"  # a tripwire joint's status, not a row's
        why = row.get("why") if isinstance(row.get("why"), str) and not judged_ok else ""
        if delta is not None:  # 'delta 41.0 > limit 10.0' is the line above; a clamp signature is not
            why = "; ".join(w for w in why.split("; ") if not w.startswith("delta "))
        if why.strip():
            out.append(f"  {esc(short(why.strip(), 160))}")
    return out


def seed_span(seeds: list) -> str:
    """'0–99' for a contiguous range, else the first few seeds."""
    ints = [s for s in seeds if isinstance(s, int)]
    if ints and len(ints) == len(seeds) and ints == list(range(ints[0], ints[0] + len(ints))):
        return f"{ints[0]}–{ints[-1]}" if len(ints) > 1 else str(ints[0])
    head = ", ".join(str(s) for s in seeds[:8])
    return head + (", …" if len(seeds) > 8 else "")


TOLD_ABOVE = (HEADLINE, "Comparison")  # results.md's sections a results post's head says already (the story)


def without_sections(md: str, titles: tuple[str, ...]) -> str:
    """results.md less its '## <title>' sections (each up to the next heading), so a post says each thing once."""
    out, skip = [], False
    for line in md.splitlines():
        if line.startswith("#"):
            skip = line.startswith("## ") and any(line[3:].startswith(t) for t in titles)
        if not skip:
            out.append(line)
    return "\n".join(out)


MASKED_LINK = re.compile(r"\[([^\[\]\n]*)\]\(")  # Discord's [text](url)


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
        line = MASKED_LINK.sub(r"\\[\1\\](", line)  # a masked link from a run's text is shown, never followed
        if line or (out and out[-1]):
            out.append(line)
    note = "\n… (shortened: the full reads are in the run's report)"
    kept, size = [], 0
    for line in out:
        if size + len(line) + 1 > limit - len(note):
            return "\n".join(kept).rstrip() + note
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).rstrip()


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


def num(v: object) -> float | None:
    """A finite number from a file someone else wrote; None (unknown) for a string, a bool, NaN or infinity."""
    return number(v)


def count_text(v: object) -> str:
    """A count as a whole number ('23', never '23.0': a count written as 23.0 by another writer too);
    '?' for what is not a whole number."""
    if type(v) is int:
        return str(v)
    n = num(v)
    return str(int(n)) if n is not None and n.is_integer() else "?"


def hours(seconds: float) -> str:
    """'15 s', '4 min', '1.25 h': a 15 s run's wall is never '0 min', nor a 30 s heartbeat '1 min'."""
    if seconds < 60:
        return f"{max(0.0, seconds):.0f} s"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def short(v: object, n: int) -> str:
    """At most n characters, cut at a word with '…' (prereg.core.words.clip_words)."""
    return clip_words(str(v), n)


def clip(s: str, n: int) -> str:
    return clip_words(s, n)


def esc(s: str) -> str:
    """Escape Discord markdown in names that come from files (run ids, arms, reasons), a secret's
    shape redacted first (escaped, `hf\\_...` would no longer look like a token to `Post`'s check); a
    masked link's brackets too, so `[x](https://evil.example)` in a reason is shown as text, never a link."""
    return MASKED_LINK.sub(r"\\[\1\\](", re.sub(r"([\\*_~`|>])", r"\\\1", redacted(s)))


def code(s: str) -> str:
    return redacted(s).replace("`", "'")
