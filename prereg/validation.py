"""Validation of a pre-registration's machine parts into the model (prereg/model.py): every problem
names the field and the 1-based line of the file."""

from __future__ import annotations

import math
import re
from collections import Counter

from prereg.errors import Problem
from prereg.gates import GateSpec
from prereg.layout import Section
from prereg.limits import MAX_SEED, MAX_SEEDS
from prereg.model import (
    Arm,
    Comparator,
    CoverageTripwire,
    Document,
    FirstActionTripwire,
    PowerPlan,
    Protocol,
    Reads,
    SectionModel,
    Tripwires,
    Validity,
)
from prereg.rules import Rule, parse_condition
from prereg.video_draw import parse_video_draw
from prereg.vocabulary import (
    COMMIT_RE,
    CONVMAPS,
    DECODES,
    DTYPES,
    FORMAT,
    INTERVALS,
    JOINT_NAMES,
    POLICIES,
    PRIMARY_READS,
    RULE_READS,
    SECONDARY_READS,
    TRIPWIRES,
)
from prereg.yamlpos import PosYAMLError, load_with_lines

TOP_KEYS = ("fontaine", "id", "title", "created", "arms", "protocol", "reads", "gates", "decision_rules", "comparison")
AMEND_KEYS = ("title", "arms", "protocol", "reads", "gates", "decision_rules", "comparison")
ARM_KEYS = (
    "name", "policy", "checkpoint", "revision", "fast_revision", "decode", "convmap", "convmap_overrides",
    "norm_tag", "dtype", "workers", "flow_steps", "task", "notes", "env", "env_sha256", "grasp_miss", "features",
)
PROTOCOL_KEYS = ("seeds", "episode_seconds", "workers", "video_draw", "record_predicts", "env", "env_sha256")
GATE_KEYS = ("gpu_hours", "pace", "stall", "warn_fraction", "decided", "sequential", "tripwires")
TRIPWIRE_KEYS = {"coverage": ("max_uncovered", "span_limited", "rig"), "first_action": ("seeds", "anchor_deg", "max_deg")}
RIG_KEYS = ("seeds", "episode_seconds")  # gates.tripwires.coverage.rig: the scripted rollouts behind the rig table
TRIPWIRES_HINT = ("tripwires: {coverage: {max_uncovered: 0.30, span_limited: [wrist_roll]}, "
                  "first_action: {anchor_deg: 6.31}} (docs/convmap.md)")
DECIDED_VALUES = ("stop", "record")  # gates.decided: stop when the rules are settled, or only record it
READS_KEYS = ("primary", "interval", "validity", "secondary", "comparator", "power")
POWER_KEYS = ("assumed_rates", "minimum_effect", "delta_sd_cm", "pilot")  # reads.power: prereg/power.py
EFFECT_KEYS = ("success_rate", "progress_cm")
VALIDITY_KEYS = ("reset_strikes_max", "zero_fallback_rate_max", "error_rows_max")
RULE_KEYS = ("if", "then", "arm")

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
OVERRIDE_RE = re.compile(r"^(?P<joint>[a-z_]+)=(?:(?P<sign>[+-]?1),)?(?P<offset>[+-]?\d+(?:\.\d+)?)$")


class _Ctx:
    """Problems with positions, for one YAML part (the front matter or an amendment block)."""

    def __init__(self, problems: list[Problem], lines: dict, prefix: str, fallback_line: int):
        self.problems = problems
        self.lines = lines
        self.prefix = prefix
        self.fallback = fallback_line

    def line(self, path: tuple) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), self.fallback)

    def name(self, path: tuple) -> str:
        out = self.prefix
        for p in path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
        return out

    def err(self, path: tuple, msg: str, hint: str = "", line: int | None = None) -> None:
        self.problems.append(Problem(self.name(path), msg, line or self.line(path), hint))


class _Errors:
    """`ctx.err` under one item's path (`errs(sub, msg, hint)` reports at path + sub), remembering
    whether any was reported: an item with a problem is not built."""

    def __init__(self, ctx: _Ctx, path: tuple) -> None:
        self.ctx, self.path, self.bad = ctx, path, False

    def __call__(self, sub: tuple, msg: str, hint: str = "") -> None:
        self.bad = True
        self.ctx.err(self.path + sub, msg, hint)

    def unknown_keys(self, raw: dict, known, what: str) -> None:
        """Each key of `raw` not in `known`: "unknown {what} 'k'", naming the known ones."""
        for k in raw:
            if k not in known:
                self((k,), f"unknown {what} '{k}'", "known: " + ", ".join(known))


def build_model(doc: Document) -> None:
    """Validate each section's machine part into `doc.sections`; problems go to `doc.problems`."""
    lay = doc.layout
    known_arms: set[str] = set()
    parent_protocol: dict = {}
    parent_gates: dict = {}
    parent_reads: dict = {}
    for sec in lay.sections:
        raw, ctx, readable = _section_yaml(doc, sec)
        if not readable:
            continue  # one YAML error, not a cascade of "missing" fields
        if sec.number == 0:
            _check_top(raw, ctx, doc)
        keys = TOP_KEYS if sec.number == 0 else AMEND_KEYS
        for k in raw:
            if k not in keys:
                ctx.err((k,), f"unknown field '{k}'", "known: " + ", ".join(keys))
        title = str(raw.get("title") or "") if sec.number else doc.title
        arms, names = _check_arms(raw.get("arms"), ctx, sec, known_arms, required=sec.number == 0)
        known_arms.update(names)
        proto_fields = _check_protocol(raw.get("protocol"), ctx, required=sec.number == 0, sealed=sec.sealed)
        protocol_d = {**parent_protocol, **proto_fields}
        protocol = Protocol(**protocol_d) if {"seeds", "episode_seconds"} <= protocol_d.keys() else None
        gate_fields = _check_gates(raw.get("gates"), ctx, required=sec.number == 0)
        gates_d = {**parent_gates, **gate_fields}
        reads_fields = _check_reads(raw.get("reads"), ctx, sec, arms, known_arms)
        reads_d = {**parent_reads, **reads_fields}
        reads = Reads(**reads_d)
        rules = _check_rules(raw.get("decision_rules"), ctx, sec, names, known_arms)
        if sec.number and not (arms or raw.get("reads") or rules) and raw:
            ctx.err((), "an amendment must add arms, reads or decision rules")
        doc.sections.append(SectionModel(sec, title, arms, protocol, GateSpec(**gates_d), gates_d, reads, rules))
        doc.sections[-1].comparison = _check_comparison(raw.get("comparison"), ctx, known_arms, protocol)
        parent_protocol, parent_gates, parent_reads = protocol_d, gates_d, reads_d


def _section_yaml(doc: Document, sec: Section) -> tuple[dict, _Ctx, bool]:
    prefix = "" if sec.number == 0 else sec.name
    if sec.yaml_start is None:
        return {}, _Ctx(doc.problems, {}, prefix, sec.start + 1), sec.number > 0
    text = "\n".join(doc.layout.lines[sec.yaml_start:sec.yaml_end]) + "\n"
    first = sec.yaml_start + 1
    try:
        value, lines, dups = load_with_lines(text, first)
    except PosYAMLError as exc:
        doc.problems.append(Problem(prefix or "front matter", str(exc), exc.line, "fix the YAML syntax"))
        return {}, _Ctx(doc.problems, {}, prefix, first), False
    ctx = _Ctx(doc.problems, lines, prefix, first)
    for path, line in dups:
        ctx.err(path, "given twice (YAML keeps only the last)", "keep one", line=line)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        ctx.err((), "must be a mapping of fields (name: value)")
        return {}, ctx, False
    return value, ctx, True


def _check_top(raw: dict, ctx: _Ctx, doc: Document) -> None:
    fmt = raw.get("fontaine", FORMAT)
    if fmt != FORMAT:
        ctx.err(("fontaine",), f"unknown format {fmt!r}", f"this tool reads {FORMAT}")
    for key in ("id", "title"):
        v = raw.get(key)
        if v is None or str(v).strip() == "":
            ctx.err((key,), "missing", "every pre-registration has an id and a title")
    pid = raw.get("id")
    if pid is not None and not NAME_RE.match(str(pid)):
        ctx.err(("id",), f"{pid!r} is not a plain name", "letters, digits, '-' and '_'")
    doc.prereg_id = str(pid or "")
    doc.title = str(raw.get("title") or "")
    doc.created = str(raw.get("created") or "")
    if not doc.created:
        ctx.err(("created",), "missing", "the date the pre-registration was written, e.g. 2026-08-13")


def _check_arms(raw, ctx: _Ctx, sec: Section, known: set[str], required: bool) -> tuple[list[Arm], set[str]]:
    """The valid arms, and every arm name declared (so a bad arm does not also break its rules)."""
    if raw is None:
        if required:
            ctx.err(("arms",), "missing", "declare at least one arm")
        return [], set()
    if not isinstance(raw, list) or not raw:
        ctx.err(("arms",), "must be a non-empty list of arms", "each arm is a mapping with name, policy, ...")
        return [], set()
    arms, names = [], set()
    for i, a in enumerate(raw):
        name = a.get("name") if isinstance(a, dict) else None
        if isinstance(name, str) and (name in known or name in names):
            ctx.err(("arms", i, "name"), f"arm '{name}' is already declared",
                    "an amendment adds new arms; give the changed arm a new name")
            continue
        if isinstance(name, str):
            names.add(name)
        arm = _check_arm(a, ctx, ("arms", i), sec)
        if arm is not None:
            arms.append(arm)
    return arms, names


def _check_arm(a, ctx: _Ctx, path: tuple, sec: Section) -> Arm | None:
    if not isinstance(a, dict):
        ctx.err(path, "an arm must be a mapping (name: ..., policy: ...)")
        return None
    errs = _Errors(ctx, path)

    def err(key, msg, hint=""):  # by one key of the arm (the helpers below take this form); no key: the arm
        errs((key,) if key else (), msg, hint)

    for k in a:  # not errs.unknown_keys: a falsy key (null, 0, '') is reported at the arm itself
        if k not in ARM_KEYS:
            err(k, f"unknown arm field '{k}'", "known: " + ", ".join(ARM_KEYS))
    name = a.get("name")
    if name is None:
        err("name", "missing", "every arm has a name")
    elif not isinstance(name, str) or not NAME_RE.match(name):
        err("name", f"{name!r} is not a plain name", "letters, digits, '-' and '_', e.g. tiny-masked")
    policy = _opt_str(a, "policy", err)  # a list or a mapping is said there
    if a.get("policy") is None:
        err("policy", "missing", "one of " + ", ".join(POLICIES))
    elif policy is not None and policy not in POLICIES:
        err("policy", f"unknown policy {policy!r}", "one of " + ", ".join(POLICIES))
    model = policy in DECODES
    checkpoint = _opt_str(a, "checkpoint", err)
    decode = _opt_str(a, "decode", err)
    convmap = _opt_str(a, "convmap", err)
    dtype = _opt_str(a, "dtype", err)
    if model:
        if checkpoint is None:
            err("checkpoint", "missing", "a path, a Hugging Face id, or 'tiny'")
        if decode is None and policy == "molmoact2":
            decode = "flow"
        if decode is None:
            err("decode", "missing", "one of " + ", ".join(DECODES[policy]))
        elif decode not in DECODES[policy]:
            err("decode", f"{decode!r} is not a decode of policy {policy}", "one of " + ", ".join(DECODES[policy]))
        if convmap is None:
            err("convmap", "missing", "the joint-convention shim: one of " + ", ".join(CONVMAPS))
        elif convmap not in CONVMAPS:
            err("convmap", f"unknown convmap {convmap!r}", "one of " + ", ".join(CONVMAPS))
        dtype = dtype or "bf16"
        if dtype not in DTYPES:
            err("dtype", f"unknown dtype {dtype!r}", "one of " + ", ".join(DTYPES))
    elif policy == "scripted":
        for k in ("checkpoint", "decode", "convmap", "convmap_overrides", "norm_tag", "flow_steps"):
            if a.get(k) is not None:
                err(k, "does not apply to the scripted policy", "remove it")
    elif policy == "lerobot":  # any lerobot checkpoint: loaded with lerobot's factory, the shim identity by default
        if checkpoint is None:
            err("checkpoint", "missing", "a lerobot policy checkpoint: a local directory or a Hugging Face id")
        for k in ("decode", "norm_tag", "flow_steps", "dtype"):
            if a.get(k) is not None:
                err(k, "does not apply to a lerobot policy", "remove it (it runs at its checkpoint's own precision)")
        convmap = convmap or "identity"
        if convmap not in ("identity", "official"):
            err("convmap", f"{convmap!r} is not a shim a lerobot policy takes",
                "identity (the default) or official, with convmap_overrides for the rest")
    features = _check_features(a.get("features"), err, policy)
    overrides = a.get("convmap_overrides") or []
    if isinstance(overrides, str):
        overrides = [overrides]
    if not isinstance(overrides, list):
        err("convmap_overrides", "must be a list like [shoulder_lift=-1,90, wrist_roll=-90]")
        overrides = []
    for j, o in enumerate(overrides):
        m = OVERRIDE_RE.match(str(o).replace(" ", ""))
        if not m:
            errs(("convmap_overrides", j), f"malformed override {o!r}",
                 "JOINT=[SIGN,]OFFSET, e.g. shoulder_lift=-1,90 or wrist_roll=-90")
        elif m.group("joint") not in JOINT_NAMES:
            errs(("convmap_overrides", j), f"unknown joint {m.group('joint')!r}", "one of " + ", ".join(JOINT_NAMES))
    workers = _opt_int(a, "workers", err, minimum=1)
    flow_steps = _opt_int(a, "flow_steps", err, minimum=1)
    if flow_steps is not None and decode != "flow":
        err("flow_steps", "only the flow decode has flow steps", "remove it or use decode: flow")
    revision = a.get("revision")
    if (model or policy == "lerobot") and checkpoint is not None and not sec.sealed:
        # A frozen plan names an immutable checkpoint; a section frozen before this rule keeps its
        # text (it is sealed) and is refused at launch instead, when what loaded differs.
        pin_problem = revision_pin_problem(checkpoint, None if revision is None else str(revision))
        if pin_problem:
            err("revision", *pin_problem)
    fast_revision = _opt_str(a, "fast_revision", err)
    if fast_revision is not None and policy != "molmoact2-discrete":
        err("fast_revision", "pins the FAST tokenizer of the discrete pathway; policy "
            f"{policy} has none", "remove it")
    elif fast_revision is not None and not COMMIT_RE.match(fast_revision):
        err("fast_revision", f"{fast_revision!r} is not a 40-hex commit (a branch or tag can move)",
            "the commit of allenai/MolmoAct2-FAST-Tokenizer, e.g. the last folder of its snapshot path")
    norm_tag = _opt_str(a, "norm_tag", err)
    task = _opt_str(a, "task", err)
    grasp_miss = a.get("grasp_miss")
    if grasp_miss is not None:
        if policy != "scripted":
            err("grasp_miss", f"is the scripted oracle's skill knob; policy {policy} has none", "remove it")
        elif isinstance(grasp_miss, bool) or not isinstance(grasp_miss, (int, float)) or not 0 <= grasp_miss <= 1:
            err("grasp_miss", f"must be a probability from 0 to 1, got {grasp_miss!r}",
                "the chance (seeded per seed) that an episode's grasps miss, e.g. grasp_miss: 0.5")
    env = _check_env_fields(a, err, sec.sealed)
    if errs.bad:
        return None
    return Arm(
        name=name, section=sec.name, line=ctx.line(path), policy=policy,
        checkpoint=checkpoint, revision=None if revision is None else str(revision), fast_revision=fast_revision,
        decode=decode if model else None, convmap=convmap if model or policy == "lerobot" else None,
        convmap_overrides=tuple(str(o).replace(" ", "") for o in overrides),
        norm_tag=norm_tag, dtype=dtype if model else (dtype or None), workers=workers,
        flow_steps=flow_steps, task=task, **env,
        grasp_miss=None if grasp_miss is None else float(grasp_miss), features=features,
    )


def _check_features(raw, err, policy) -> tuple[str, ...]:
    """`features:` {checkpoint feature: sim source}: a lerobot checkpoint's inputs fed from a camera or
    `state` when their names differ (by name otherwise), as FEATURE=SOURCE tokens."""
    if raw is None:
        return ()
    if policy != "lerobot":
        err("features", f"only a lerobot policy reads features; policy {policy} has none", "remove it")
        return ()
    ok = isinstance(raw, dict) and raw and all(
        isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip() and "=" not in k for k, v in raw.items())
    if not ok:
        err("features", "must map each checkpoint feature to a sim input",
            "e.g. features: {observation.images.top: front, observation.state: state}")
        return ()
    return tuple(f"{k.strip()}={v.strip()}" for k, v in raw.items())


ENV_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")  # engine.envs.spec.NAME_RE
ENV_FILE_SUFFIXES = (".yaml", ".yml")  # a declarative env file, relative to the document's folder
ENV_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def _check_env_fields(raw: dict, err, sealed: bool) -> dict:
    """`env` (a registered env's name or an env file) and `env_sha256` (its content hash, which a
    plan frozen from now on must give: an env changed after freezing makes a run INVALID)."""
    out: dict = {}
    env = raw.get("env")
    if env is not None:
        if not isinstance(env, str) or not (ENV_NAME_RE.fullmatch(env) or env.endswith(ENV_FILE_SUFFIXES)):
            err("env", f"{env!r} is not an env", "a name from `fontaine-eval --list-envs` (e.g. boat-on-disk) "
                "or an env file, path/to/env.yaml")
        else:
            out["env"] = env
    sha = raw.get("env_sha256")
    if sha is not None:
        if env is None:
            err("env_sha256", "pins an env the plan does not name", "add env: NAME beside it")
        elif not isinstance(sha, str) or not ENV_SHA256_RE.fullmatch(sha):
            err("env_sha256", f"{sha!r} is not a sha256 (64 lower-case hex digits)",
                f"`fontaine-eval --list-envs --env {env}` prints it")
        else:
            out["env_sha256"] = sha
    elif env is not None and not sealed:
        err("env_sha256", "missing: a frozen plan pins its env by content",
            f"`fontaine-eval --list-envs --env {env}` prints its sha256")
    return out


SHA256_PIN_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
TINY_PINS = ("local", "tiny")  # the tiny model is rebuilt from its recipe, not downloaded


def revision_pin_problem(checkpoint: str, revision: str | None) -> tuple[str, str] | None:
    """(message, hint) when `revision` does not pin `checkpoint` immutably, else None.

    A Hugging Face id is pinned by a 40-hex commit; a local directory by `sha256:` of its weight
    files (what the manifest records as `weights_sha256`); `tiny` by `local`.
    """
    if checkpoint == "tiny":
        if revision is None or revision in TINY_PINS or SHA256_PIN_RE.match(revision):
            return None
        return f"{revision!r} does not pin the tiny model", "use `revision: local`"
    if revision is None:
        return "missing: a frozen plan names one immutable checkpoint", (
            "a 40-hex commit for a Hugging Face id, or sha256:<weights_sha256> for a local directory"
        )
    if COMMIT_RE.match(revision) or SHA256_PIN_RE.match(revision):
        return None
    return f"{revision!r} is not immutable (a branch or tag can move)", (
        "a 40-hex commit for a Hugging Face id (`fontaine-eval --molmoact2 ID` prints the commit it loaded), "
        "or sha256:<weights_sha256> for a local directory"
    )


def _opt_str(a: dict, key: str, err) -> str | None:
    v = a.get(key)
    if v is None:
        return None
    if isinstance(v, (dict, list, bool)):
        err(key, f"must be a single value, got {v!r}")
        return None
    return str(v)


def _opt_int(a: dict, key: str, err, minimum: int) -> int | None:
    v = a.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        err(key, f"must be a whole number >= {minimum}, got {v!r}")
        return None
    return v


def parse_seeds(v) -> list[int]:
    """An explicit list, a range string ('0-99', '0-4,10'), an int, or {start, count}. Raises ValueError.

    Bounded as `fontaine-eval --seeds` is (prereg/limits.py): at most MAX_SEEDS seeds, none past
    MAX_SEED, checked before anything is expanded, so '0-10000000' is refused at once."""
    out: list[int] = []
    _add_seeds(v, out, top=True)
    return out


def _seed_bound(lo: int, hi: int, out: list[int], what: str) -> None:
    if lo < 0:
        raise ValueError("seeds are >= 0")
    if hi > MAX_SEED:
        raise ValueError(f"seed {hi} in {what} is past the largest seed, {MAX_SEED}")
    if len(out) + (hi - lo + 1) > MAX_SEEDS:
        raise ValueError(f"{what} names more than {MAX_SEEDS:,} seeds, the most one run takes")


def _add_seeds(v, out: list[int], top: bool) -> None:
    if isinstance(v, bool):
        raise ValueError(f"{v!r} is not a seed")
    if isinstance(v, int):
        _seed_bound(v, v, out, str(v))
        out.append(v)
    elif isinstance(v, dict):
        if set(v) != {"start", "count"}:
            raise ValueError("a seed range mapping has exactly 'start' and 'count'")
        start, count = v["start"], v["count"]
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, count)) or count < 1:
            raise ValueError("start and count must be whole numbers, count >= 1")
        _seed_bound(start, start + count - 1, out, f"{{start: {start}, count: {count}}}")
        out.extend(range(start, start + count))
    elif isinstance(v, list) and top:
        for x in v:
            if isinstance(x, list):
                raise ValueError("nested lists are not seeds")
            _add_seeds(x, out, top=False)
    elif isinstance(v, str):
        if len(v) > 100_000:
            raise ValueError(f"a seed string of {len(v):,} characters is too long; use a range like 0-99")
        for part in v.replace(" ", "").split(","):
            if not part:
                continue
            m = re.fullmatch(r"([0-9]{1,20})(?:-([0-9]{1,20}))?", part)
            if not m:
                raise ValueError(f"{part[:40]!r} is not a seed or a range like 0-99")
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if hi < lo:
                raise ValueError(f"range {part!r} runs backwards")
            _seed_bound(lo, hi, out, repr(part))
            out.extend(range(lo, hi + 1))
    else:
        raise ValueError(f"{str(v)[:40]!r} is not a seed list")


def _check_protocol(raw, ctx: _Ctx, required: bool, sealed: bool = False) -> dict:
    if raw is None:
        if required:
            ctx.err(("protocol",), "missing", "seeds, episode_seconds, workers, video_draw")
        return {}
    if not isinstance(raw, dict):
        ctx.err(("protocol",), "must be a mapping (seeds, episode_seconds, workers, video_draw)")
        return {}
    out: dict = {}
    for k in raw:
        if k not in PROTOCOL_KEYS:
            ctx.err(("protocol", k), f"unknown protocol field '{k}'", "known: " + ", ".join(PROTOCOL_KEYS))
    if "seeds" in raw:
        try:
            seeds = parse_seeds(raw["seeds"])
        except ValueError as exc:
            ctx.err(("protocol", "seeds"), str(exc), "a list [0, 1, 2], a range '0-99', or {start: 0, count: 100}")
        else:
            dup = sorted(s for s, n in Counter(seeds).items() if n > 1)
            if not seeds:
                ctx.err(("protocol", "seeds"), "the seed list is empty", "list at least one seed, e.g. 0-99")
            elif dup:
                ctx.err(("protocol", "seeds"), f"seeds given twice: {dup[:10]}", "each seed runs once")
            else:
                out["seeds"] = tuple(seeds)
    elif required:
        ctx.err(("protocol", "seeds"), "missing", "a list [0, 1, 2], a range '0-99', or {start: 0, count: 100}")
    if "episode_seconds" in raw:
        v = raw["episode_seconds"]
        if not _nonneg(v) or v <= 0:
            ctx.err(("protocol", "episode_seconds"), f"must be a finite number of seconds > 0, got {v!r}",
                    "the budget is stated in seconds, e.g. 30")
        else:
            out["episode_seconds"] = float(v)
    elif required:
        ctx.err(("protocol", "episode_seconds"), "missing", "the episode budget in seconds, e.g. 30")
    if "workers" in raw:
        v = raw["workers"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            ctx.err(("protocol", "workers"), f"must be a whole number >= 1, got {v!r}")
        else:
            out["workers"] = v
    if "video_draw" in raw:
        try:
            out["video_draw"] = parse_video_draw(raw["video_draw"])
        except ValueError as exc:
            ctx.err(("protocol", "video_draw"), str(exc),
                    "auto films every seed of a run of up to 100 seeds; 0 the first episode of each worker")
    if "record_predicts" in raw:
        v = raw["record_predicts"]
        if not isinstance(v, bool):
            ctx.err(("protocol", "record_predicts"), f"must be true or false, got {v!r}",
                    "true writes predicts.jsonl: every predict's tokens, chunk and fallback")
        else:
            out["record_predicts"] = v
    out.update(_check_env_fields(raw, lambda k, msg, hint="": ctx.err(("protocol", k), msg, hint), sealed))
    return out


def _nonneg(v) -> bool:
    """A finite number >= 0 (YAML's .nan and .inf are numbers, and neither is a budget)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0


def _check_gates(raw, ctx: _Ctx, required: bool) -> dict:
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
        if v is not None and not (_nonneg(v) and v > 0):
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
            if lim is None or not (_nonneg(lim) and lim > 0):
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
                    if not (_nonneg(stall[k]) and stall[k] > 0):
                        ctx.err(("gates", "stall", k), f"must be a number > 0, got {stall[k]!r}")
                    else:
                        out[dest] = float(stall[k])
            for k in stall:
                if k not in ("factor", "min_s"):
                    ctx.err(("gates", "stall", k), f"unknown stall field '{k}'", "factor, min_s")
    if "warn_fraction" in raw:
        v = raw["warn_fraction"]
        if not (_nonneg(v) and 0 < v <= 1):
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
        from prereg.sequential import problems as sequential_problems

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


def _check_tripwires(raw, ctx: _Ctx) -> Tripwires | None:
    """gates.tripwires: the shim's tripwires the driver runs before the first episode; None when invalid."""
    path = ("gates", "tripwires")
    if not isinstance(raw, dict) or not raw:
        ctx.err(path, "must be a mapping naming at least one of " + ", ".join(TRIPWIRES), TRIPWIRES_HINT)
        return None
    err = _Errors(ctx, path)
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
                if not (_nonneg(v) and 0 < v <= 3600):
                    err(("coverage", "rig", "episode_seconds"), f"must be seconds in (0, 3600], got {v!r}", "e.g. 30")
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
        if len(values) not in (1, len(JOINT_NAMES)) or not all(_nonneg(x) for x in values):
            err(("first_action", "anchor_deg"), f"must be one number of degrees >= 0 or {len(JOINT_NAMES)}, got {v!r}",
                "the same metric on a reference policy, e.g. 6.31, or one per joint: " + ", ".join(JOINT_NAMES))
        else:
            out["anchor_deg"] = tuple(float(x) for x in values) * (len(JOINT_NAMES) if len(values) == 1 else 1)
    if "max_deg" in body:
        v = body["max_deg"]
        if not (_nonneg(v) and v > 0):
            err(("first_action", "max_deg"), f"must be a number of degrees > 0, got {v!r}",
                "the limit per joint without an anchor, e.g. 10")
        else:
            out["max_deg"] = float(v)
    return FirstActionTripwire(**out)


def _check_reads(raw, ctx: _Ctx, sec: Section, arms: list[Arm], known: set[str]) -> dict:
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
    return out


def _rate(v) -> bool:
    return _nonneg(v) and 0 < v < 1


def _check_power(raw, ctx: _Ctx, known: set[str]) -> PowerPlan | None:
    """reads.power: assumed rates, the effect worth detecting, and the paired delta's SD (or a pilot run)."""
    path = ("reads", "power")
    hint = "{assumed_rates: {arm-a: 0.1}, minimum_effect: {success_rate: 0.15, progress_cm: 1.0}, delta_sd_cm: 2.5}"
    if not isinstance(raw, dict):
        ctx.err(path, "must be a mapping (" + ", ".join(POWER_KEYS) + ")", hint)
        return None
    err = _Errors(ctx, path)
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
                elif k == "progress_cm" and not (_nonneg(v) and v > 0):
                    err(("minimum_effect", k), f"must be a distance in cm > 0, got {v!r}")
                elif k == "success_rate":
                    kw["min_success_effect"] = float(v)
                elif k == "progress_cm":
                    kw["min_progress_cm"] = float(v)
    if raw.get("delta_sd_cm") is not None and raw.get("pilot") is not None:
        err(("pilot",), "give delta_sd_cm or pilot, not both", "the paired delta's SD has one source")
    sd = raw.get("delta_sd_cm")
    if sd is not None:
        if not (_nonneg(sd) and sd > 0):
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


def _check_validity(v, ctx: _Ctx) -> Validity:
    if not isinstance(v, dict):
        ctx.err(("reads", "validity"), "must be a mapping of thresholds", "known: " + ", ".join(VALIDITY_KEYS))
        return Validity()
    kw = {}
    for k, val in v.items():
        path = ("reads", "validity", k)
        if k not in VALIDITY_KEYS:
            ctx.err(path, f"unknown threshold '{k}'", "known: " + ", ".join(VALIDITY_KEYS))
        elif k == "zero_fallback_rate_max":
            if val is not None and not (_nonneg(val) and val <= 1):
                ctx.err(path, f"must be a rate in [0, 1], got {val!r}")
            else:
                kw[k] = None if val is None else float(val)
        elif isinstance(val, bool) or not isinstance(val, int) or val < 0:
            ctx.err(path, f"must be a whole number >= 0, got {val!r}")
        else:
            kw[k] = val
    return Validity(**kw)


def _check_comparators(raw, ctx: _Ctx, arms: list[Arm], known: set[str]) -> tuple[Comparator, ...]:
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


def _check_comparison(raw, ctx: _Ctx, known: set[str], protocol: Protocol | None):
    """`comparison:` (prereg/comparison.py): two arms decided by an anytime-valid test; None when absent or invalid."""
    if raw is None:
        return None
    from prereg.comparison import parse

    spec, problems = parse(raw, known, len(protocol.seeds) if protocol else None)
    for sub, msg, hint in problems:
        ctx.err(("comparison",) + sub, msg, hint)
    if spec is not None:
        from dataclasses import replace

        spec = replace(spec, line=ctx.line(("comparison",)))
    return spec


def _check_rules(raw, ctx: _Ctx, sec: Section, declared: set[str], known: set[str]) -> list[Rule]:
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
