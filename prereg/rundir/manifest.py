"""manifest.json as a type (`Manifest`: what was asked for and what it resolved to, the registration it
runs under), the tripwire table of a run, and `Snapshot`: one bounded read of a run's manifest, status,
pid and STOP, with what could not be read named."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from prereg.core.safe_read import kind_of, os_error_why
from prereg.rundir.files import HEARTBEAT, MANIFEST, PID, ROWS, STATUS, TRIPWIRES_FIELD, load_json_object, typed_field
from prereg.rundir.rows import BASE_VARIANT, POOLED_READ, SUCCESS_FIELDS, RowsRead, counted_variant, decision_variants, read_rows
from prereg.rundir.status import NUMERIC, GateSpec, Status
from prereg.rundir.stop import StopReason, read_stop


@dataclass(frozen=True)
class PreregRef:
    """Which frozen section a run was launched from (manifest.json's `prereg`)."""

    id: str | None
    sha256: str | None
    path: str | None


@dataclass(frozen=True)
class Manifest:
    """manifest.json, typed (the driver writes it at start; `raw` keeps every field as read)."""

    run_id: str | None = None
    arm: str | None = None  # (an early manifest's {name: ...} reads as its name)
    prereg: PreregRef | None = None
    policy: dict | None = None  # the PolicySpec (an early manifest's bare kind reads as {kind, its flat settings})
    policy_resolved: dict | None = None  # what the policy loaded (a comparison run: one per arm, by arm)
    env: dict | None = None  # {name, sha256, file?}: the scene the run ran (absent before envs: boat-on-disk)
    seeds: tuple[int, ...] | None = None
    episode_seconds: float | None = None
    workers: int | None = None
    gates: GateSpec = field(default_factory=GateSpec)
    config: dict | None = None  # engine.record.config.RunConfig.as_dict(): what a resume starts from
    started_at: str | None = None
    tripwires: dict | None = None  # the registered tripwires' record (TRIPWIRES_FIELD), once they ran
    resumes: tuple[dict, ...] = ()
    arms: tuple[str, ...] = ()  # a comparison run (`fontaine-eval --arms A,B`): its two arms, A then B
    comparison: dict | None = None  # ... and its registered comparison (prereg.stats.comparison.ComparisonSpec, as recorded)
    legacy_prereg_id: str | None = None  # an early manifest: `prereg` as a bare id, or `prereg_id`
    legacy_prereg_sha256: str | None = None  # ... and `prereg_sha256`
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    problems: tuple[str, ...] = ()

    @property
    def is_comparison(self) -> bool:
        """A comparison run: one directory, both arms' rows, each row naming its `arm`."""
        return len(self.arms) == 2

    @property
    def success_field(self) -> str:
        """What the run reads as a success (the plan's `protocol: success_field`, recorded in the config):
        `success` (Fontaine's) unless it says `env_success`."""
        v = (self.config or {}).get("success_field")
        return v if v in SUCCESS_FIELDS else SUCCESS_FIELDS[0]

    @property
    def variants(self) -> tuple[str, ...]:
        """A crossed design's variants (issue 48), `base` first: every seed runs on each (config.variants
        names those beside `base`); () for a run of the scene alone."""
        v = (self.config or {}).get("variants")
        names = [x for x in v if isinstance(x, str) and x and x != BASE_VARIANT] if isinstance(v, list) else []
        return (BASE_VARIANT, *dict.fromkeys(names)) if names else ()

    @property
    def read_variant(self) -> str:
        """What the plan's decision reads (config.read_variant; `base` by default): a variant's name, or
        `pooled` (POOLED_READ: the pooled rate, prereg/stats/variants_decide.py) in a crossed design."""
        v = (self.config or {}).get("read_variant")
        ok = isinstance(v, str) and (v in self.variants or (v == POOLED_READ and bool(self.variants)))
        return v if ok else BASE_VARIANT

    @property
    def counted_variant(self) -> str | None:
        """The variant every k/n of this run counts (prereg.rundir.rows.rows_of_variant): the read variant in a
        crossed design, None (every row) for a run of the scene alone. A pooled read has no one variant: its
        counts (the live panels, the fold, the validity checks) count `base`, the scene as declared, and
        say so; only its decision reads the pooled rate."""
        return counted_variant(self.variants, self.read_variant)

    @property
    def decision_variants(self) -> tuple[str, ...]:
        """The variants whose episodes the plan's decision reads (prereg.rundir.rows.decision_variants): the
        read variant, or the pooled ones under a pooled read; () for a run of the scene alone."""
        return decision_variants(self.variants, self.read_variant, self.camera_variants, self.pool_cameras)

    @property
    def camera_variants(self) -> tuple[str, ...]:
        """The variants that move a camera (config.camera_variants): read apart unless `pool_cameras`."""
        v = (self.config or {}).get("camera_variants")
        return tuple(x for x in v if x in self.variants) if isinstance(v, list) else ()

    @property
    def pool_cameras(self) -> bool:
        return (self.config or {}).get("pool_cameras") is True

    @property
    def policy_kind(self) -> str | None:
        k = (self.policy or {}).get("kind")
        return k if isinstance(k, str) else None

    @property
    def prereg_id(self) -> str | None:
        return (self.prereg.id if self.prereg else None) or self.legacy_prereg_id

    @property
    def prereg_sha256(self) -> str | None:
        return (self.prereg.sha256 if self.prereg else None) or self.legacy_prereg_sha256

    def recorded(self, key: str) -> bool:
        """Whether manifest.json has `key` at all, of whatever type (a field from before it existed is absent)."""
        return key in self.raw

    @classmethod
    def of(cls, manifest: "Manifest | Mapping | None") -> "Manifest | None":
        """A Manifest from a Manifest, a manifest.json object or None (no manifest): None stays None."""
        return manifest if manifest is None or isinstance(manifest, Manifest) else cls.from_dict(manifest)

    @classmethod
    def from_dict(cls, d: object) -> "Manifest":
        if not isinstance(d, Mapping):
            return cls(problems=(f"{MANIFEST}: not a JSON object",))
        d = dict(d)
        arm = d.get("arm")
        if isinstance(arm, dict) and isinstance(arm.get("name"), str):
            d["arm"] = arm["name"]
        probs: list[str] = []
        kw = {name: typed_field(d, name, kinds, probs, MANIFEST) for name, kinds in _MANIFEST_FIELDS.items()}
        policy = d.get("policy")
        if isinstance(policy, str):  # an early manifest: the kind alone, its settings flat (or under `settings`)
            flat = {**d, **next((d[k] for k in ("arm_settings", "settings") if isinstance(d.get(k), dict)), {})}
            policy = {"kind": policy, **{k: flat[k] for k in _EARLY_POLICY_KEYS if flat.get(k) is not None}}
        kw["policy"] = policy if isinstance(policy, dict) else None
        pr = d.get("prereg")
        ref = None
        if isinstance(pr, dict):
            ref = PreregRef(*(pr.get(k) if isinstance(pr.get(k), str) else None for k in ("id", "sha256", "path")))
        elif isinstance(pr, str):
            kw["legacy_prereg_id"] = pr
        elif pr is not None:
            probs.append(f"{MANIFEST}: prereg is {type(pr).__name__}, not an object")
        for key in ("prereg_id", "prereg_sha256"):
            if kw.get(f"legacy_{key}") is None and isinstance(d.get(key), str):
                kw[f"legacy_{key}"] = d[key]
        seeds = d.get("seeds")
        if isinstance(seeds, list) and all(type(x) is int for x in seeds):
            kw["seeds"] = tuple(seeds)
        elif seeds is not None:
            probs.append(f"{MANIFEST}: seeds is not a list of whole numbers")
        resumes = d.get("resumes")
        kw["resumes"] = tuple(x for x in resumes if isinstance(x, dict)) if isinstance(resumes, list) else ()
        arms = d.get("arms")
        if isinstance(arms, list) and arms:
            names = [a.get("arm") if isinstance(a, dict) else None for a in arms]
            if len(names) == 2 and all(isinstance(n, str) and n for n in names) and names[0] != names[1]:
                kw["arms"] = tuple(names)
            else:
                probs.append(f"{MANIFEST}: arms is not two different arms ({{arm, policy}} each)")
        return cls(**kw, prereg=ref, gates=GateSpec.from_dict(d.get("gates")), raw=dict(d), problems=tuple(probs))

    def arm_view(self, arm: str) -> "Manifest | None":
        """One arm of a comparison run, as a run of that arm alone would record it: `arm`, its `policy`
        and `policy_resolved`, the hash of the section that registers it; None when this is not a
        comparison run of `arm`. (`fontaine-eval --arms A,B` records `arm` "A-vs-B", A's policy at the
        top, both under `arms`, each arm's section under `prereg.arms`.)"""
        arms = self.raw.get("arms")
        entry = next((a for a in arms if isinstance(a, dict) and a.get("arm") == arm), None) if isinstance(arms, list) else None
        if entry is None:
            return None
        view = dict(self.raw, arm=arm, policy=entry.get("policy"))
        resolved = self.raw.get("policy_resolved")
        if isinstance(resolved, dict) and isinstance(resolved.get(arm), dict):
            view["policy_resolved"] = resolved[arm]
        pre = self.raw.get("prereg")
        if isinstance(pre, dict):
            per_arm = (pre.get("arms") or {}).get(arm) if isinstance(pre.get("arms"), dict) else None
            view["prereg"] = dict(pre, sha256=per_arm.get("sha256") if isinstance(per_arm, dict) else pre.get("sha256"))
        return Manifest.from_dict(view)

    def to_dict(self) -> dict:
        out = dict(self.raw)
        for k in _MANIFEST_FIELDS:
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.policy is not None:
            out["policy"] = self.policy
        if self.seeds is not None:
            out["seeds"] = list(self.seeds)
        if self.prereg is not None:
            out["prereg"] = asdict(self.prereg)
        if "gates" in out or self.gates != GateSpec():
            out["gates"] = self.gates.to_dict()
        return out


_EARLY_POLICY_KEYS = ("checkpoint", "decode", "dtype", "convmap", "revision")
_MANIFEST_FIELDS = {
    "run_id": (str,), "arm": (str,), "policy_resolved": (dict,), "env": (dict,), "episode_seconds": NUMERIC,
    "workers": (int,), "config": (dict,), "started_at": (str,), "comparison": (dict,), TRIPWIRES_FIELD: (dict,),
}


def tripwire_table(status: "Status | Mapping | None", manifest: "Manifest | Mapping | None" = None) -> tuple[bool | None, str]:
    """(passed, the per-joint tables as text) of a run's registered tripwires, from status.json's
    record, else the manifest's (typed, or the files' objects); (None, '') when none ran.
    Never raises on a record someone else wrote."""
    record = tripwire_record(status, manifest)
    if record is None:
        return None, ""
    passed, table = record.get("passed"), record.get("table")
    return (passed if isinstance(passed, bool) else None), (table if isinstance(table, str) else "")


def tripwire_record(status: "Status | Mapping | None", manifest: "Manifest | Mapping | None" = None) -> dict | None:
    """The registered tripwires' record (TRIPWIRES_FIELD: passed, failed, table, and per arm its
    reports' per-joint rows), status.json's, else the manifest's; None when none ran."""
    for holder in (Status.of(status), Manifest.of(manifest)):
        record = holder.tripwires if holder is not None else None
        if isinstance(record, dict):
            return record
    return None


def read_manifest(run_dir: str | Path) -> tuple[Manifest | None, str | None]:
    """(the run's manifest, None), or (None, why not): 'missing', or a problem in words (never blocks)."""
    d, why = load_json_object(Path(run_dir) / MANIFEST)
    return (None, why) if d is None else (Manifest.from_dict(d), None)


def counted_rows(run_dir: str | Path, manifest: Manifest | None = None) -> RowsRead:
    """A run directory's rows as every read of it counts them: a crossed design's read variant's only
    (`Manifest.counted_variant`), every row otherwise; `manifest` when the caller read it already."""
    m = manifest if manifest is not None else read_manifest(run_dir)[0]
    return read_rows(Path(run_dir) / ROWS).of_variant(m.counted_variant if m is not None else None)


@dataclass(frozen=True)
class Snapshot:
    """One read of a run directory's small files: what the console, the notifier, the report and a
    resume read. Never raises and never blocks: a file that cannot be read is in `unreadable`."""

    run_dir: Path
    manifest: Manifest | None
    status: Status | None
    pid: dict | None
    stop: StopReason | None
    heartbeat_mtime: float | None
    rows_size: int | None
    missing: tuple[str, ...] = ()
    unreadable: dict = field(default_factory=dict)  # file name -> why

    @property
    def unreadable_lines(self) -> list[str]:
        """One line per file that could not be read, naming the file ('status.json: is a FIFO ...')."""
        return [why if why.startswith(name) else f"{name}: {why}" for name, why in self.unreadable.items()]

    @property
    def problems(self) -> tuple[str, ...]:
        """The fields of status.json and manifest.json that cannot be read, one line each naming the
        file and the field ('status.json: elapsed_s is str 'x', not int or float'); a status.json
        without a state is one too."""
        out = [p for doc in (self.status, self.manifest) if doc is not None for p in doc.problems]
        if self.status is not None and self.status.state is None and not any(p.startswith(f"{STATUS}: state ") for p in out):
            out.append(f"{STATUS}: no state")
        return tuple(out)


def read_snapshot(run_dir: str | Path) -> Snapshot:
    """Read manifest.json, status.json, pid.json, STOP, the heartbeat's and rows.jsonl's stat."""
    run_dir = Path(run_dir)
    missing: list[str] = []
    unreadable: dict[str, str] = {}

    def obj(name: str) -> dict | None:
        d, why = load_json_object(run_dir / name)
        if why == "missing":
            missing.append(name)
        elif why:
            unreadable[name] = why
        return d

    man, st, pid = obj(MANIFEST), obj(STATUS), obj(PID)
    hb = None
    try:
        hb = os.stat(run_dir / HEARTBEAT).st_mtime
    except FileNotFoundError:
        missing.append(HEARTBEAT)
    except OSError as exc:
        unreadable[HEARTBEAT] = os_error_why(exc)
    size = None
    try:
        s = os.stat(run_dir / ROWS)
        kind = kind_of(s.st_mode)
        if kind is not None:
            unreadable[ROWS] = f"is {kind}, not a regular file"
        else:
            size = s.st_size
    except FileNotFoundError:
        missing.append(ROWS)
    except OSError as exc:
        unreadable[ROWS] = os_error_why(exc)
    return Snapshot(run_dir, None if man is None else Manifest.from_dict(man), None if st is None else Status.from_dict(st),
                    pid, read_stop(run_dir), hb, size, tuple(missing), unreadable)
