"""Validation of a section's arms (policy, checkpoint and its pin, decode, convmap, env, features) and its
protocol (seeds, episode seconds, workers, video draw, env): each problem names its field and line."""

from __future__ import annotations

import math
import re
from collections import Counter

from prereg.core.limits import MAX_EPISODE_SECONDS, MAX_SEED, MAX_SEEDS, MAX_WORKERS, MIN_EPISODE_SECONDS
from prereg.core.video_draw import parse_video_draw
from prereg.core.vocabulary import (
    COMMIT_RE,
    CONVMAPS,
    DECODES,
    DTYPES,
    JOINT_NAMES,
    PLUGIN,
    POLICIES,
    decode_problem,
)
from prereg.core.webhook_env import pass_env_problem
from prereg.document.fields import ARM_KEYS, NAME_RE, OVERRIDE_RE, PROTOCOL_KEYS, Ctx, Errors
from prereg.document.layout import Section
from prereg.document.model import (
    Arm,
)
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ, SUCCESS_FIELDS, VARIANT_FIELDS, VARIANT_NAME_RE


def check_arms(raw, ctx: Ctx, sec: Section, known: set[str], required: bool) -> tuple[list[Arm], set[str]]:
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


def _check_arm(a, ctx: Ctx, path: tuple, sec: Section) -> Arm | None:
    if not isinstance(a, dict):
        ctx.err(path, "an arm must be a mapping (name: ..., policy: ...)")
        return None
    errs = Errors(ctx, path)

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
        elif decode_problem(policy, decode) is not None:
            err("decode", decode_problem(policy, decode), "one of " + ", ".join(DECODES[policy]))
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
    elif policy == PLUGIN:  # a lab's entry point, pinned by the content of its installed package
        if checkpoint is None:
            err("checkpoint", "missing", "the name of its fontaine.policies entry point, e.g. towards-middle")
        elif not NAME_RE.match(checkpoint):
            err("checkpoint", f"{checkpoint!r} is not an entry point name", "the name under [fontaine.policies]")
        for k in ("decode", "norm_tag", "flow_steps", "dtype", "fast_revision"):
            if a.get(k) is not None:
                err(k, "does not apply to a plugin policy", "remove it")
        convmap = convmap or "identity"
        if convmap not in ("identity", "official"):
            err("convmap", f"{convmap!r} is not a shim a plugin policy takes",
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
    workers = _opt_int(a, "workers", err, minimum=1, maximum=MAX_WORKERS)
    flow_steps = _opt_int(a, "flow_steps", err, minimum=1, maximum=1000)
    if flow_steps is not None and decode != "flow":
        err("flow_steps", "only the flow decode has flow steps", "remove it or use decode: flow")
    revision = a.get("revision")
    if policy == PLUGIN and not sec.sealed and (revision is None or not SHA256_PIN_RE.match(str(revision))):
        err("revision", "a plugin policy is pinned by the content of its installed package" if revision is None
            else f"{revision!r} does not pin a plugin policy",
            "sha256:<plugin_sha256>: the pin a launch refusal or a run's manifest (policy_resolved.pin) names")
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
    if task is not None and not task.strip():
        err("task", "is empty", "the instruction the policy is given, e.g. 'put the boat on the disk'; or leave it out")
        task = None
    knobs = {"grasp_miss": "that an episode's grasps miss, e.g. grasp_miss: 0.5",
             "grasp_drop": "that it lets go after the lift, e.g. grasp_drop: 0.3"}
    for knob, what in knobs.items():
        value = a.get(knob)
        if value is None:
            continue
        if policy != "scripted":
            err(knob, f"is a knob of the scripted oracle; policy {policy} has none", "remove it")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            err(knob, f"must be a probability from 0 to 1, got {value!r}", f"the chance (seeded per seed) {what}")
    grasp_miss, grasp_drop = a.get("grasp_miss"), a.get("grasp_drop")
    env = _check_env_fields(a, err, sec.sealed)
    if errs.bad:
        return None
    return Arm(
        name=name, section=sec.name, line=ctx.line(path), policy=policy,
        checkpoint=checkpoint, revision=None if revision is None else str(revision), fast_revision=fast_revision,
        decode=decode if model else None, convmap=convmap if model or policy in ("lerobot", PLUGIN) else None,
        convmap_overrides=tuple(str(o).replace(" ", "") for o in overrides),
        norm_tag=norm_tag, dtype=dtype if model else (dtype or None), workers=workers,
        flow_steps=flow_steps, task=task, **env,
        grasp_miss=None if grasp_miss is None else float(grasp_miss),
        grasp_drop=None if grasp_drop is None else float(grasp_drop), features=features,
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
ENV_GYM_RE = re.compile(r"gym:[A-Za-z0-9_./-]{1,128}")  # a Gymnasium env with Fontaine's adapter (engine.envs.gym_adapter)
ENV_SHA256_RE = re.compile(r"[0-9a-f]{64}")


def _check_env_fields(raw: dict, err, sealed: bool) -> dict:
    """`env` (a registered env's name or an env file) and `env_sha256` (its content hash, which a
    plan frozen from now on must give: an env changed after freezing makes a run INVALID)."""
    out: dict = {}
    env = raw.get("env")
    if env is not None:
        if not isinstance(env, str) or not (ENV_NAME_RE.fullmatch(env) or env.endswith(ENV_FILE_SUFFIXES)
                                            or ENV_GYM_RE.fullmatch(env)):
            err("env", f"{env!r} is not an env", "a name from `fontaine-eval --list-envs` (e.g. boat-on-disk), "
                "an env file, path/to/env.yaml, or gym:ID")
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


def episode_seconds_ok(v) -> bool:
    """An episode budget fontaine-eval --episode-seconds would take (prereg/core/limits.py)."""
    return nonneg(v) and MIN_EPISODE_SECONDS <= v <= MAX_EPISODE_SECONDS


def _opt_int(a: dict, key: str, err, minimum: int, maximum: int) -> int | None:
    v = a.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= maximum:
        err(key, f"must be a whole number from {minimum} to {maximum:,}, got {v!r}")
        return None
    return v


def parse_seeds(v) -> list[int]:
    """An explicit list, a range string ('0-99', '0-4,10'), an int, or {start, count}. Raises ValueError.

    Bounded as `fontaine-eval --seeds` is (prereg/core/limits.py): at most MAX_SEEDS seeds, none past
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


def check_protocol(raw, ctx: Ctx, required: bool, sealed: bool = False) -> dict:
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
        if not episode_seconds_ok(v):
            ctx.err(("protocol", "episode_seconds"),
                    f"must be seconds from {MIN_EPISODE_SECONDS:g} to {MAX_EPISODE_SECONDS:g}, got {v!r}",
                    "the budget is stated in seconds, e.g. 30")
        else:
            out["episode_seconds"] = float(v)
    elif required:
        ctx.err(("protocol", "episode_seconds"), "missing", "the episode budget in seconds, e.g. 30")
    if "workers" in raw:
        v = raw["workers"]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WORKERS:
            ctx.err(("protocol", "workers"), f"must be a whole number from 1 to {MAX_WORKERS}, got {v!r}",
                    "the most fontaine-eval --workers takes")
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
    if "pass_env" in raw:
        v = raw["pass_env"]
        names = v if isinstance(v, list) else None
        problems = ["not a list of names"] if names is None else [p for p in map(pass_env_problem, names) if p]
        if problems:
            ctx.err(("protocol", "pass_env"), problems[0],
                    "a list of environment variable names the workers get, e.g. [LAB_TRACE_DIR]")
        else:
            out["pass_env"] = tuple(dict.fromkeys(names))
    if "success_field" in raw:
        v = raw["success_field"]
        if v not in SUCCESS_FIELDS:
            ctx.err(("protocol", "success_field"), f"must be {' or '.join(SUCCESS_FIELDS)}, got {v!r}",
                    "success (the default): Fontaine's, a place's object released and at rest on the target; "
                    "env_success: the env's own test as it declares it")
        else:
            out["success_field"] = v
    out.update(_check_env_fields(raw, lambda k, msg, hint="": ctx.err(("protocol", k), msg, hint), sealed))
    out.update(_check_variants(raw, ctx))
    return out


VARIANTS_HINT = ("a list of the env file's variant names, [dim-light, clutter], or a mapping declaring each inline: "
                 "{dim-light: {lighting: {direction: [0.3, 0, -1], intensity: 0.35}}} (docs/envs.md)")


def _check_variants(raw: dict, ctx: Ctx) -> dict:
    """The shape of a crossed design (issue 48): `variants` (names, or name -> an inline declaration with an
    env file's fields), `read_variant` and `pool_cameras`. What a declaration's fields say, and whether the
    env declares a listed name, the engine checks against the compiled scene at launch."""
    out: dict = {}
    at = ("protocol", "variants")
    if "variants" in raw:
        v = raw["variants"]
        names = list(v) if isinstance(v, (list, dict)) else None
        if not names:
            ctx.err(at, f"{v!r} lists no variant", VARIANTS_HINT)
        else:
            bad = False
            for i, name in enumerate(names):
                where = (*at, name if isinstance(v, dict) else i)
                if name == POOLED_READ:
                    bad = True
                    ctx.err(where, f"{name!r} is not a variant name", f"{POOLED_READ!r} is what read_variant says to "
                            "decide on the pooled rate; name the variant otherwise")
                elif not isinstance(name, str) or not VARIANT_NAME_RE.fullmatch(name) or name == BASE_VARIANT:
                    bad = True
                    ctx.err(where, f"{name!r} is not a variant name", "lower-case letters, digits and '-'; "
                            f"{BASE_VARIANT!r} is the scene as declared, which always runs and is never listed")
                elif names.count(name) > 1 and names.index(name) < i:
                    bad = True
                    ctx.err(where, f"{name!r} is listed twice", "each variant runs once per seed")
                elif isinstance(v, dict):
                    bad |= _declaration_problem(v[name], ctx, where)
            if not bad:
                out["variants"] = tuple(names)
                out["variant_declarations"] = dict(v) if isinstance(v, dict) else {}
    if "read_variant" in raw:
        v = raw["read_variant"]
        if not isinstance(v, str) or not (v == BASE_VARIANT or VARIANT_NAME_RE.fullmatch(v)):
            ctx.err(("protocol", "read_variant"), f"{v!r} is not a variant name",
                    f"{BASE_VARIANT} (the default: the scene as declared), one of protocol.variants, or {POOLED_READ} "
                    "(the decision reads the pooled rate)")
        else:
            out["read_variant"] = v
    if "pool_cameras" in raw:
        v = raw["pool_cameras"]
        if not isinstance(v, bool):
            ctx.err(("protocol", "pool_cameras"), f"must be true or false, got {v!r}",
                    "false (the default) reads the variants that move a camera apart from the pooled rate")
        else:
            out["pool_cameras"] = v
    return out


def _declaration_problem(decl, ctx: Ctx, where: tuple) -> bool:
    """An inline declaration's shape: a mapping of VARIANT_FIELDS holding plain data. True when it is wrong."""
    if not isinstance(decl, dict) or not decl:
        ctx.err(where, "must be a mapping of " + ", ".join(VARIANT_FIELDS), VARIANTS_HINT)
        return True
    bad = False
    for k, val in decl.items():
        if k not in VARIANT_FIELDS:
            bad = True
            ctx.err((*where, k), f"unknown variant field '{k}'", "known: " + ", ".join(VARIANT_FIELDS))
        elif not _plain(val):
            bad = True
            ctx.err((*where, k), f"{str(val)[:60]!r} holds something other than numbers, names, lists and mappings",
                    "a declaration is frozen and hashed as plain data")
    return bad


def _plain(v) -> bool:
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(map(_plain, v))
    return v is None or (isinstance(v, (str, int, float)) and not (isinstance(v, float) and not math.isfinite(v)))


def nonneg(v) -> bool:
    """A finite number >= 0 (YAML's .nan and .inf are numbers, and neither is a budget)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0
