"""The launch guard: everything a run needs, taken from a frozen, unmodified pre-registration.

`fontaine-eval --prereg FILE --arm NAME` calls `resolve_launch` and uses nothing else from
the command line for the arm's settings; it writes `prereg_sha256` into the manifest so a
run can always be traced to the exact text that registered it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from prereg.core.errors import PreregError
from prereg.document.read import load
from prereg.document.seal import require_intact, verify_layout
from prereg.rundir.status import GateSpec


@dataclass(frozen=True)
class LaunchSpec:
    prereg_id: str
    prereg_path: str  # absolute
    prereg_sha256: str  # the hash of the frozen section that declares the arm
    arm: str
    policy: str  # scripted | molmoact2 | molmoact2-discrete
    checkpoint: str | None  # a path, a Hugging Face id, or "tiny"
    revision: str | None
    decode: str | None  # flow | reference | grammar-masked
    convmap: str | None  # official | identity | fit
    convmap_overrides: list[str]  # JOINT=[SIGN,]OFFSET
    norm_tag: str | None
    dtype: str | None  # bf16 | fp32
    workers: int
    flow_steps: int | None
    task: str | None
    seeds: list[int]
    episode_seconds: float
    video_draw: str
    gates: GateSpec
    section: str = "base"  # base | amendment-N
    record_predicts: bool = False
    pass_env: tuple[str, ...] = ()  # environment variables the workers get by name
    success_field: str = "success"  # what the plan reads as a success (prereg.rundir.rows.SUCCESS_FIELDS)
    env: str | None = None  # the arm's env, else the protocol's; None: boat-on-disk (the engine's default)
    env_sha256: str | None = None  # the content hash the plan froze with it (None: not pinned)
    grasp_miss: float | None = None  # the scripted oracle's skill knob (None: 0)
    grasp_drop: float | None = None  # the scripted oracle's drop knob (None: 0)
    features: tuple[str, ...] = ()  # lerobot: FEATURE=SOURCE (engine/policies/lerobot_policy/features.py)
    fast_revision: str | None = None  # molmoact2-discrete: the release FAST tokenizer's commit
    variants: tuple[str, ...] = ()  # a crossed design (issue 48): the variants beside `base` (prereg.document.model.Protocol)
    variant_declarations: dict = field(default_factory=dict)  # name -> an inline declaration
    read_variant: str = "base"
    pool_cameras: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def resolve_launch(path: str | Path, arm_name: str) -> LaunchSpec:
    """The frozen settings of one arm, or PreregError saying what, where (file:line) and what to do."""
    doc = load(path)
    p = str(doc.path)
    problems = [pr for pr in doc.problems if not _in_open_amendment(doc, pr.line)]
    if problems:
        raise PreregError.from_problems(p, problems, "does not validate, so it cannot be launched",
                                        "fix the fields named above (`fontaine-prereg validate`)")
    require_intact(doc.layout, p,
                   not_frozen=f"so it cannot be launched (a pre-registration is frozen before its launch): "
                              f"run `fontaine-prereg freeze {p}`",
                   modified=f"A frozen pre-registration is never edited: revert the change (e.g. `git diff {p}`), "
                            f"or register the change as an amendment (`fontaine-prereg amend {p}`)")
    found = doc.find_arm(arm_name)
    draft = next((sec for sec in doc.layout.sections if sec.number and not sec.sealed), None)
    if found is None and draft is not None and doc.problems:
        raise PreregError.from_problems(p, doc.problems, f"no launchable arm {arm_name!r}; {draft.name} is a draft "
                                        "that does not validate", f"fix it, then `fontaine-prereg freeze {p}`")
    if found is None:
        known = ", ".join(a.name for a in doc.arms()) or "none"
        raise PreregError(f"{p}: no arm {arm_name!r} (arms: {known}); pick one of those, or add it by amendment")
    arm, sm = found
    sec = sm.section
    if not sec.sealed:
        raise PreregError(f"{p}:{arm.line}: arm {arm_name!r} is declared in {sec.name}, which is not frozen yet: "
                          f"run `fontaine-prereg freeze {p}` before launching it")
    proto = sm.protocol
    return LaunchSpec(
        prereg_id=doc.prereg_id,
        prereg_path=str(doc.path.resolve()),
        prereg_sha256=sec.seal.sha256,
        arm=arm.name,
        policy=arm.policy,
        checkpoint=arm.checkpoint,
        revision=arm.revision,
        fast_revision=arm.fast_revision,
        decode=arm.decode,
        convmap=arm.convmap,
        convmap_overrides=list(arm.convmap_overrides),
        norm_tag=arm.norm_tag,
        dtype=arm.dtype,
        workers=arm.workers or proto.workers,
        flow_steps=arm.flow_steps,
        task=arm.task,
        seeds=list(proto.seeds),
        episode_seconds=proto.episode_seconds,
        video_draw=proto.video_draw,
        gates=sm.gates,
        section=sec.name,
        record_predicts=bool(proto.record_predicts),
        pass_env=tuple(proto.pass_env),
        success_field=proto.success_field,
        env=arm.env or proto.env,
        env_sha256=arm.env_sha256 if arm.env else proto.env_sha256,
        grasp_miss=arm.grasp_miss,
        grasp_drop=arm.grasp_drop,
        features=tuple(arm.features),
        variants=tuple(proto.variants),
        variant_declarations=dict(proto.variant_declarations),
        read_variant=proto.read_variant,
        pool_cameras=proto.pool_cameras,
    )


def _in_open_amendment(doc, line: int | None) -> bool:
    """A problem inside a draft amendment does not block launching the arms already frozen."""
    if line is None:
        return False
    return any(sec.number and not sec.sealed and sec.start < line <= (sec.end or len(doc.layout.lines))
               for sec in doc.layout.sections)


def launchable_arms(path: str | Path) -> list[str]:
    """Arm names that `resolve_launch` would accept now (base and frozen amendments), in order.

    For pickers: an empty list means the document is invalid, unfrozen or modified, and
    `resolve_launch` on any name says why.
    """
    try:
        doc = load(path)
    except PreregError:
        return []
    if any(not _in_open_amendment(doc, pr.line) for pr in doc.problems) or not verify_layout(doc.layout).ok:
        return []
    return [a.name for s in doc.sections if s.section.sealed for a in s.arms]
