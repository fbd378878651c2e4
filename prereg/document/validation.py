"""Validation of a pre-registration's machine parts into the model (prereg/document/model.py): every problem
names the field and the 1-based line of the file."""

from __future__ import annotations

from prereg.core.errors import Problem
from prereg.core.vocabulary import (
    FORMAT,
)
from prereg.core.yamlpos import PosYAMLError, load_with_lines
from prereg.document.check_arms import check_arms, check_protocol
from prereg.document.check_plan import check_comparison, check_gates, check_reads, check_rules
from prereg.document.comparison_spec import SUCCESS_METRIC
from prereg.document.fields import AMEND_KEYS, NAME_RE, TOP_KEYS, Ctx
from prereg.document.layout import Section
from prereg.document.model import (
    Document,
    Protocol,
    Reads,
    SectionModel,
)
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ
from prereg.rundir.status import GateSpec


def build_model(doc: Document) -> None:
    """Validate each section's machine part into `doc.sections`; problems go to `doc.problems`."""
    lay = doc.layout
    known_arms: set[str] = set()
    parent_protocol: dict = {}
    parent_gates: dict = {}
    parent_reads: dict = {}
    sources: dict[str, str] = {}  # "gates.decided" -> the section that set the value in force
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
        arms, names = check_arms(raw.get("arms"), ctx, sec, known_arms, required=sec.number == 0)
        known_arms.update(names)
        proto_fields = check_protocol(raw.get("protocol"), ctx, required=sec.number == 0, sealed=sec.sealed)
        protocol_d = {**parent_protocol, **proto_fields}
        _check_read_variant(protocol_d, proto_fields, ctx)
        protocol = Protocol(**protocol_d) if {"seeds", "episode_seconds"} <= protocol_d.keys() else None
        gate_fields = check_gates(raw.get("gates"), ctx, required=sec.number == 0)
        gates_d = {**parent_gates, **gate_fields}
        reads_fields = check_reads(raw.get("reads"), ctx, sec, arms, known_arms)
        reads_d = {**parent_reads, **reads_fields}
        reads = Reads(**reads_d)
        if "real" in reads_fields and protocol is not None and reads.real.trials > len(set(protocol.seeds)):
            ctx.err(("reads", "real", "trials"), f"{reads.real.trials} real trials but the protocol has "
                    f"{len(set(protocol.seeds))} sim seeds", "real trials are drawn from the sim seeds: at most one each")
        rules = check_rules(raw.get("decision_rules"), ctx, sec, names, known_arms)
        if sec.number and not (arms or raw.get("reads") or rules) and raw:
            ctx.err((), "an amendment must add arms, reads or decision rules")
        for part, own in (("protocol", proto_fields), ("gates", gate_fields), ("reads", reads_fields)):
            sources.update({f"{part}.{_RAW_NAMES.get(k, k)}": sec.name for k in own})
        doc.sections.append(SectionModel(sec, title, arms, protocol, GateSpec(**gates_d), gates_d, reads, rules,
                                         sources=dict(sources)))
        doc.sections[-1].comparison = check_comparison(raw.get("comparison"), ctx, known_arms, protocol)
        _check_pooled_comparison(doc.sections[-1], ctx)
        parent_protocol, parent_gates, parent_reads = protocol_d, gates_d, reads_d


def _check_read_variant(protocol_d: dict, own: dict, ctx: Ctx) -> None:
    """`read_variant` names the scene as declared, a variant the plan runs, or `pooled` (the pooled rate of the
    variants run: only with variants listed); said where either was set."""
    read = protocol_d.get("read_variant", BASE_VARIANT)
    runs = protocol_d.get("variants", ())
    if read == POOLED_READ:
        if not runs and ({"read_variant", "variants"} & own.keys()):
            ctx.err(("protocol", "read_variant" if "read_variant" in own else "variants"),
                    "read_variant: pooled reads the pooled rate of the variants run, but protocol.variants lists none",
                    "list the variants every seed also runs under protocol.variants, or read base")
        return
    if read != BASE_VARIANT and read not in runs and ({"read_variant", "variants"} & own.keys()):
        ctx.err(("protocol", "read_variant" if "read_variant" in own else "variants"),
                f"read_variant {read!r} is not among the variants run ({', '.join([BASE_VARIANT, *runs])})",
                "list it under protocol.variants, or read base")


def _check_pooled_comparison(sm: SectionModel, ctx: Ctx) -> None:
    """A comparison decided on the pooled rate reads success shares: a progress comparison reads one variant."""
    spec, proto = sm.comparison, sm.protocol
    if spec is not None and proto is not None and proto.read_variant == POOLED_READ and spec.metric != SUCCESS_METRIC:
        ctx.err(("comparison", "metric"), f"read_variant: pooled decides on the pooled success rate, but the comparison's "
                f"metric is {spec.metric}", "compare metric: success, or read one variant (read_variant: base)")


# the model's names for the keys a document writes (GateSpec flattens pace and stall)
_RAW_NAMES = {"pace_limit_hours": "pace", "pace_after_episodes": "pace", "stall_factor": "stall",
              "stall_min_s": "stall"}


def _section_yaml(doc: Document, sec: Section) -> tuple[dict, Ctx, bool]:
    prefix = "" if sec.number == 0 else sec.name
    if sec.yaml_start is None:
        return {}, Ctx(doc.problems, {}, prefix, sec.start + 1), sec.number > 0
    text = "\n".join(doc.layout.lines[sec.yaml_start:sec.yaml_end]) + "\n"
    first = sec.yaml_start + 1
    try:
        value, lines, dups = load_with_lines(text, first)
    except PosYAMLError as exc:
        doc.problems.append(Problem(prefix or "front matter", str(exc), exc.line, "fix the YAML syntax"))
        return {}, Ctx(doc.problems, {}, prefix, first), False
    ctx = Ctx(doc.problems, lines, prefix, first)
    for path, line in dups:
        ctx.err(path, "given twice (YAML keeps only the last)", "keep one", line=line)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        ctx.err((), "must be a mapping of fields (name: value)")
        return {}, ctx, False
    return value, ctx, True


def _check_top(raw: dict, ctx: Ctx, doc: Document) -> None:
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
    elif not _is_date(raw.get("created")):
        ctx.err(("created",), f"{raw.get('created')!r} is not a date", "the date it was written, YYYY-MM-DD, e.g. 2026-08-13")


def _is_date(v: object) -> bool:
    """A date as YAML reads `2026-08-13` (a datetime.date), or the same written as text."""
    import datetime

    if isinstance(v, datetime.date):
        return True
    try:
        datetime.date.fromisoformat(str(v))
        return True
    except ValueError:
        return False
