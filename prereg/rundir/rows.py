"""The row contract (`rows.jsonl`, schema 4): its fields and their types, one reader, and which rows
count (`latest_rows`: the last row of each planned seed). What a row means (the one classifier and
`RowCounts`) is prereg/rundir/outcomes.py's.

Schema 4 (issue 45) renamed `grasped` to `grasped_lifted` (both jaws held the object off its support:
Fontaine's grasp, unchanged) and added `grasped_squeezed` (both jaws pressed it from two sides, on its
support or not: so101-nexus's `is_grasped`), `reachable` (the SO-101 reaches a grasp pose on the object and
a place pose at the target from the seed's start, engine/sim/reach.py; an unreachable seed is counted
apart by every read) and `env_success` / `env_success_tick` for every env (the env's own success test
beside Fontaine's `success`, which for a place is the object released and at rest on the target). An
older row's `grasped` reads as `grasped_lifted` (`grasped_lifted()`); its `reachable` reads as null (a
seed not known to be unreachable counts).

Schema 3 renamed `boat_z_mm` to `object_z_mm` (any env's object: the height of its base) and added
`success_streak` (the ticks in a row the env's success test held at the end: a hold the episode cut
short) and, for a Gymnasium env run through an adapter, `env_success` / `env_success_tick` (the
env's own success, beside Fontaine's). A schema-1 or -2 row still reads: its `boat_z_mm` stands in
for `object_z_mm` (`object_z_mm()`), and the fields it lacks read as null.

Schema 2 added the grasp fields read from the simulator's contacts (`grasped`, `grasp_tick`,
`lift_max_mm`, `carried_cm`, `released`), then `touched` (the arm touched the object at some
tick) and `off_table` (the object ended below the table top: on the floor); a schema-2 row
written before those two reads them as null, and `episode_outcome` falls back on the distances.
A schema-1 row (written before) is still a valid row: the fields it lacks read as null, like any
field a row leaves out.

A row is one finished episode. Unknown values are null, never omitted. A line that does not
parse (a torn last line after a crash, a hand edit), or that parses but carries a field of
the wrong type (`"seed": true`, `"status": 5`, `"success": "yes"` or `1`), is a bad line:
reported with its line number and why, and set aside. A row is never coerced into shape.

"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from prereg.core.safe_read import LINE_MAX_BYTES, ROWS_MAX_BYTES, Unreadable, read_lines
from prereg.core.untrusted import redacted

SCHEMA = 4

ROW_FIELDS: tuple[str, ...] = (
    "schema", "run_id", "arm", "seed", "variant", "worker",
    "success", "success_tick",
    "ticks", "episode_seconds",
    "dist_initial_cm", "dist_final_cm", "dist_min_cm",
    "progress_cm", "progress_final_cm",
    "dist_by_second_cm",
    "knock_away", "engaged",
    "upright_final", "object_z_mm", "tipped",
    "reset_strikes", "success_streak",
    "grasped_lifted", "grasp_tick", "lift_max_mm", "carried_cm", "released", "grasped_squeezed",
    "touched", "off_table",
    "env_success", "env_success_tick", "reachable",
    "predicts", "zero_fallbacks", "mask_violations", "mean_batch",
    "first_action_delta_deg",
    "wall_s", "started_at", "finished_at",
    "video", "note",
    "status", "error",
)

KNOCK_AWAY_CM = -1.0  # progress_final_cm at or below this is a knock-away
ENGAGED_CM = 1.0  # progress_cm above this is engagement
BASE_VARIANT = "base"  # a row whose `variant` is null ran the scene as declared (issue 48: engine.sim.variants.BASE)
POOLED_READ = "pooled"  # read_variant: the decision reads the pooled rate (prereg/stats/variants_decide.py), never a variant's name
VARIANT_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}", re.ASCII)  # a variant's name (never BASE_VARIANT)
VARIANT_FIELDS = ("lighting", "colors", "distractors", "camera_offsets")  # what a variant's declaration may say


def counted_variant(variants, read_variant: str | None) -> str | None:
    """The variant every k/n of a run counts (the live panels, the fold, the summary, validity, the decision
    rules): the read variant in a crossed design, `base` when its decision reads the pooled rate (no one
    variant is the pooled rate: its counts are the scene's as declared, and say so), None (every row) for a
    run of the scene alone. RunConfig and Manifest both ask here."""
    if not variants:
        return None
    return BASE_VARIANT if read_variant in (None, "", POOLED_READ) else read_variant


def pooled_variants(variants, camera=(), pool_cameras: bool = False) -> tuple[str, ...]:
    """The variants the pooled rate averages, of `variants` (base first): every one, a camera variant only
    when the plan pools cameras (a camera's pose is a sensitivity, read apart, SimplerEnv's practice)."""
    return tuple(v for v in variants if pool_cameras or v not in camera)


def decision_variants(variants, read_variant: str | None, camera=(), pool_cameras: bool = False) -> tuple[str, ...]:
    """The variants whose episodes a crossed design's decision reads, of `variants` (base first): the pooled
    ones when it reads the pooled rate, else the read variant alone; () for a run of the scene alone."""
    if not variants:
        return ()
    if read_variant == POOLED_READ:
        return pooled_variants(variants, camera, pool_cameras)
    return (counted_variant(variants, read_variant),)


def variant_of(row: dict) -> str:
    """A row's variant: its `variant`, or the scene as declared (`base`) when null."""
    v = row.get("variant")
    return v if isinstance(v, str) and v else BASE_VARIANT


def rows_of_variant(rows, variant: str | None) -> list:
    """The rows a read of `variant` counts (a crossed design: that variant's; None: every row)."""
    return list(rows) if variant is None else [r for r in rows if variant_of(r) == variant]


def episode_job(arm: str | None, variant: str | None, seed: int, *, comparison: bool, crossed: bool):
    """An episode's identity as the driver, its pool and status.json's episode lists (`in_flight_seeds`,
    `lost_seeds`, `cancelled_seeds`, as JSON lists) name it: the seed; (arm, seed) in a comparison run;
    (variant, seed) in a crossed design, `base` by name (variant None); (arm, variant, seed) in both."""
    parts = ((arm,) if comparison else ()) + ((variant or BASE_VARIANT,) if crossed else ())
    return (*parts, seed) if parts else seed


OK = "ok"  # the one status of a finished episode; any other status (or none) is an error row

# ---------------------------------------------------------------- field types

_NONE = type(None)
_INT = frozenset({int})  # `type(v) in ...`: a bool is never an int here, a float never an int
_OPT_INT = frozenset({int, _NONE})
_OPT_NUM = frozenset({int, float, _NONE})
_OPT_STR = frozenset({str, _NONE})
_OPT_BOOL = frozenset({bool, _NONE})
_OPT_NUMS = frozenset({list, _NONE})  # a list of numbers (checked element by element)
_OPT_NUM_OR_NUMS = frozenset({int, float, list, _NONE})

FIELD_TYPES: dict[str, frozenset] = {
    "schema": _OPT_INT, "run_id": _OPT_STR, "arm": _OPT_STR, "seed": _INT, "variant": _OPT_STR,
    "worker": frozenset({int, str, _NONE}),
    "success": _OPT_BOOL, "success_tick": _OPT_INT,
    "ticks": _OPT_INT, "episode_seconds": _OPT_NUM,
    "dist_initial_cm": _OPT_NUM, "dist_final_cm": _OPT_NUM, "dist_min_cm": _OPT_NUM,
    "progress_cm": _OPT_NUM, "progress_final_cm": _OPT_NUM,
    "dist_by_second_cm": _OPT_NUMS,
    "knock_away": _OPT_BOOL, "engaged": _OPT_BOOL,
    "upright_final": _OPT_NUM, "object_z_mm": _OPT_NUM, "tipped": _OPT_BOOL,
    "reset_strikes": _OPT_INT, "success_streak": _OPT_INT,
    "grasped_lifted": _OPT_BOOL, "grasped_squeezed": _OPT_BOOL, "reachable": _OPT_BOOL,
    "grasp_tick": _OPT_INT, "lift_max_mm": _OPT_NUM, "carried_cm": _OPT_NUM,
    "released": _OPT_BOOL, "touched": _OPT_BOOL, "off_table": _OPT_BOOL,
    "env_success": _OPT_BOOL, "env_success_tick": _OPT_INT,
    "boat_z_mm": _OPT_NUM,  # LEGACY_FIELDS: schema 1 and 2's name for object_z_mm
    "grasped": _OPT_BOOL,  # LEGACY_FIELDS: schema 2 and 3's name for grasped_lifted
    "predicts": _OPT_INT, "zero_fallbacks": _OPT_INT, "mask_violations": _OPT_INT, "mean_batch": _OPT_NUM,
    "first_action_delta_deg": _OPT_NUM_OR_NUMS,  # per-joint list from the engine; a number is accepted
    "wall_s": _OPT_NUM, "started_at": _OPT_STR, "finished_at": _OPT_STR,
    "video": _OPT_STR, "note": _OPT_STR,
    "status": _OPT_STR, "error": _OPT_STR,
}
LEGACY_FIELDS = ("boat_z_mm", "grasped")  # read (and type-checked) in old rows, never written


def number(value) -> float | None:
    """A finite number as float; None for null, bools, strings, NaN and infinities."""
    t = type(value)
    if t is float:
        return value if math.isfinite(value) else None
    if t is int:
        return float(value)
    return None


def object_z_mm(row: dict) -> float | None:
    """The object's base height at the end (mm): `object_z_mm`, or a schema-1/2 row's `boat_z_mm`."""
    z = number(row.get("object_z_mm"))
    return number(row.get("boat_z_mm")) if z is None else z


def grasped_lifted(row: dict) -> bool | None:
    """Whether both jaws held the object off its support: `grasped_lifted`, or a schema-2/3 row's `grasped`."""
    v = row.get("grasped_lifted")
    return row.get("grasped") if v is None else v


SUCCESS_FIELDS = ("success", "env_success")  # what a plan's reads count as a success (protocol `success_field`)


def read_as_success(row: dict, success_field: str = SUCCESS_FIELDS[0]) -> dict:
    """The row as a plan reads it: with `success_field: env_success`, the env's own success and its tick
    stand in for Fontaine's (`success`: a place released and at rest), so every read counts the plan's."""
    if success_field == SUCCESS_FIELDS[0]:
        return row
    return {**row, "success": row.get("env_success"), "success_tick": row.get("env_success_tick")}


def unreachable(row: dict) -> bool:
    """The seed's start is out of the SO-101's reach (`reachable` false): counted apart by every read. A
    row that does not say (older schemas, an error row) counts as reachable."""
    return row.get("reachable") is False


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true/false", _NONE: "null",
               list: "a list of numbers"}
_NUMBER = (int, float)


def row_problem(row: object) -> str | None:
    """Why `row` is not a valid row of any readable schema (None when it is): not an object, no seed, a field of the wrong type.

    Checked against `FIELD_TYPES` with exact type checks: a bool is not an integer, 1 is not
    true, "yes" is not true, and nothing is coerced. Fields outside the schema are allowed (a
    later schema may add them); a field the row lacks reads as null.
    """
    if type(row) is not dict:
        return "not a JSON object"
    if "seed" not in row:
        return "no 'seed' field"
    types = FIELD_TYPES
    for k, v in row.items():
        allowed = types.get(k)
        if allowed is None:
            continue
        t = type(v)
        if t not in allowed:
            return _wrong(k, v, allowed)
        if t is list and not all(type(x) in _NUMBER for x in v):
            return f"{k!r} is {_short(v)}: expected a list of numbers"
    return None


_VALID_SHAPES: dict = {}  # (field names, value types) of rows found valid -> their list fields
_MAX_SHAPES = 256


def all_valid(rows: list) -> bool:
    """True when every item of `rows` is a valid row; on False, `row_problem` names the bad ones.

    A run's rows share a few shapes (the same fields, the same types): a row whose shape was found
    valid before needs only the numbers of its lists checked, not each field against the schema
    again (benchmarks/bench_console.py opens a 100k-row run with it)."""
    shapes = _VALID_SHAPES
    for r in rows:
        if type(r) is not dict:
            return False
        shape = (tuple(r), tuple(map(type, r.values())))
        lists = shapes.get(shape)
        if lists is None:
            if row_problem(r) is not None:
                return False
            if len(shapes) < _MAX_SHAPES:
                shapes[shape] = tuple(k for k, v in r.items() if type(v) is list)
            continue
        for k in lists:  # the element types of a list are not in its shape
            for x in r[k]:
                if type(x) not in _NUMBER:
                    return False
    return True


def _wrong(key: str, value: object, allowed: frozenset) -> str:
    order = (int, float, list, str, bool, _NONE)
    want = " or ".join(_TYPE_NAMES[t] for t in order if t in allowed)
    return f"{key!r} is {_short(value)}: expected {want}"


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------- reading


@dataclass
class BadLine:
    line_no: int  # 1-based
    text: str
    reason: str
    torn: bool = False  # the last line, without its newline: a write cut short


@dataclass
class RowsRead:
    rows: list[dict] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    line_nos: list[int] = field(default_factory=list)  # the line of each row, in order
    problem: str | None = None  # the file is there but cannot be read: why ('is a FIFO (named pipe), not a ...')

    def of_variant(self, variant: str | None) -> "RowsRead":
        """The read as a read of `variant` counts it (rows_of_variant: a crossed design's one variant; None:
        unchanged), each row's line number kept beside it; the bad lines stay (they name no variant)."""
        if variant is None:
            return self
        kept = [(r, n) for r, n in zip(self.rows, self.line_nos or [None] * len(self.rows)) if variant_of(r) == variant]
        return RowsRead([r for r, _ in kept], list(self.bad), [n for _, n in kept] if self.line_nos else [], self.problem)


def complete_row(partial: dict) -> dict:
    """Order a row's fields by the schema, with null for every field not given; a secret's shape in a
    text field (an error message quoting a token or a webhook URL) is redacted: what the driver
    writes to rows.jsonl and rows.json, and what publish uploads, never carries one."""
    row = {k: partial.get(k) for k in ROW_FIELDS}
    row["schema"] = SCHEMA
    extra = {k: v for k, v in partial.items() if k not in row}
    row.update(extra)
    return {k: redacted(v) if isinstance(v, str) else v for k, v in row.items()}


def missing_fields(row: dict) -> list[str]:
    return [k for k in ROW_FIELDS if k not in row]


def parse_line(text: str, line_no: int) -> tuple[dict | None, BadLine | None]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, BadLine(line_no, text[:200], f"not JSON ({exc.msg} at column {exc.colno})")
    problem = row_problem(obj)
    if problem is not None:
        return None, BadLine(line_no, text[:200], problem)
    return {_FIELD_NAMES.get(k, k): v for k, v in obj.items()}, None  # one str per field name, not one per row


# json.loads makes each row's 40 field names anew: shared, a row takes about half the memory (a 300 MB
# rows.jsonl read at 1.5 GB, now 0.85 GB; benchmarks/bench_console.py times the read)
_FIELD_NAMES = {name: name for name in ROW_FIELDS}


def read_rows(path: str | Path, max_bytes: int = ROWS_MAX_BYTES) -> RowsRead:
    """Read a whole rows.jsonl (missing file = no rows).

    A rows.jsonl that is there but cannot be read (a FIFO, a device, a directory, a symlink
    loop, more than `max_bytes`) is never opened for a blocking read: `problem` says why, and
    it is also one bad line (line 0), so every consumer that counts bad lines (the report's
    validity, the console's corrupt count) sees that the run's rows could not be read rather
    than a run with no rows."""
    out = RowsRead()
    last: dict[tuple, dict] = {}  # (arm, variant, seed) -> its latest row: a line repeated is one object, not one each
    try:
        for i, raw, length, ended in read_lines(path, max_bytes):
            if raw is None:
                out.bad.append(BadLine(i, "", f"a line of {length:,} bytes, more than the {LINE_MAX_BYTES:,} a row "
                                              "may be", torn=not ended))
                continue
            if not raw.strip():
                continue
            text = raw.decode("utf-8", errors="replace")
            if not ended:
                out.bad.append(BadLine(i, text[:200], "torn last line (no newline: a write was cut short)", torn=True))
                continue
            row, bad = parse_line(text, i)
            if bad is not None:
                out.bad.append(bad)
            else:
                key = (row.get("arm"), row.get("variant"), row.get("seed"))
                if last.get(key) == row:
                    row = last[key]  # the same row again (300 MB of one line read at 1 GB): shared, read-only
                last[key] = row
                out.rows.append(row)
                out.line_nos.append(i)
    except FileNotFoundError:
        return RowsRead()
    except Unreadable as exc:
        out = RowsRead(problem=exc.why)
        out.bad.append(BadLine(0, "", f"{exc} (no row of this run can be read)"))
    return out


def last_row_of_seed(path: str | Path, seed: int, max_bytes: int = ROWS_MAX_BYTES,
                     arm: str | None = None) -> tuple[dict | None, str]:
    """The last row of `seed` (of `arm`'s, a comparison run) in a rows.jsonl (a resumed seed's latest,
    the one every count reads), and a problem in words (`last_rows_of_seed`: the last one written)."""
    found, problem = last_rows_of_seed(path, seed, max_bytes, arm)
    return (next(reversed(found.values())) if found else None), problem


def last_rows_of_seed(path: str | Path, seed: int, max_bytes: int = ROWS_MAX_BYTES,
                      arm: str | None = None) -> tuple[dict[str, dict], str]:
    """The last row of `seed` on each variant (`variant_of`: a crossed design's; `base` alone otherwise),
    in the order those rows were written, and a problem in words.

    Read as `read_rows` reads (regular files only, bounded, each candidate line through
    `parse_line`, so a wrong-typed row is never shown as a row); lines that do not mention the
    seed are skipped unparsed, so the seed view opens fast on a 100,000-row run."""
    name = Path(path).name
    needles = (f'"seed": {seed}'.encode(), f'"seed":{seed}'.encode())
    found: dict[str, dict] = {}
    try:
        for i, raw, _, ended in read_lines(path, max_bytes):
            if raw is None or not ended or not any(n in raw for n in needles):
                continue
            row, bad = parse_line(raw.decode("utf-8", errors="replace"), i)
            if bad is None and row.get("seed") == seed and (arm is None or row.get("arm") == arm):
                variant = variant_of(row)
                found.pop(variant, None)  # its place is the last written
                found[variant] = row
    except FileNotFoundError:
        return {}, f"{name} is missing"
    except Unreadable as exc:
        return {}, str(exc)
    except OSError as exc:
        return {}, f"{name}: {exc.strerror or exc}"
    return found, "" if found else f"no row for seed {seed}{f' of {arm}' if arm else ''} yet"


def row_video(run_dir: str | Path, row: dict | None) -> Path | None:
    """The row's filmed episode (its `video`, relative to the run directory) when it is a regular file inside
    the run directory: never a path out of it (the report's page links it, publish uploads it)."""
    rel = row.get("video") if isinstance(row, dict) else None
    if not isinstance(rel, str) or not rel:
        return None
    root = Path(run_dir).resolve()
    try:
        path = (root / rel).resolve()
    except (OSError, RuntimeError):
        return None
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


@dataclass(frozen=True)
class Latest:
    """An arm's rows by the one denominator (`latest_rows`)."""

    by_seed: dict  # seed -> its row: the last row of each planned seed, in the order rows came
    duplicates: tuple[int, ...] = ()  # a seed once for every row a later row of it replaced
    out_of_plan: tuple[int, ...] = ()  # seeds with rows that are not in the plan (sorted, once each)
    missing: tuple[int, ...] = ()  # planned seeds with no row yet (sorted; empty without a plan)


def latest_rows(rows, planned=None) -> Latest:
    """The denominator, once: an arm counts its planned seeds, each by the last row written for it (a
    resumed run re-runs the seed whose row was an error; a line copied twice is one episode). A row
    for a seed outside `planned` is read and not counted; without a plan (None) every seed counts.
    A row whose seed is not an integer is not a row (read_rows sets such lines aside)."""
    keep = set(planned) if planned is not None else None
    by_seed: dict[int, dict] = {}
    dups: list[int] = []
    extra: set[int] = set()
    for r in rows:
        s = r.get("seed") if isinstance(r, dict) else None
        if type(s) is not int:
            continue
        if keep is not None and s not in keep:
            extra.add(s)
            continue
        if s in by_seed:
            dups.append(s)
        by_seed[s] = r
    missing = tuple(sorted(keep - by_seed.keys())) if keep is not None else ()
    return Latest(by_seed, tuple(dups), tuple(sorted(extra)), missing)


def rows_by_seed(rows, planned) -> dict[int, dict]:
    """The last row of each planned seed (`latest_rows`: a resumed run may repeat one)."""
    return latest_rows(rows, planned).by_seed


def plan_prefix(planned, by_seed) -> list[dict]:
    """The rows of the registered seeds in plan order, up to the first seed with no row yet.

    Seed k counts once every seed before it in the plan has its row: what a sequential or
    curtailed decision may read (prereg/stats/verdict.py), so that the order in which episodes
    finish cannot move it."""
    out = []
    for s in planned:
        r = by_seed.get(s)
        if r is None:
            break
        out.append(r)
    return out
