"""status.json as a type: `Status` (state, counts, gates, the structured stop reason), written by the
driver through `to_dict()` and read by everyone through `from_dict()` with every field type-checked;
and `GateSpec`, the gates a run enforces (the plan's `gates:` or the flags)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from prereg.core.untrusted import redacted
from prereg.rundir.files import FINAL_STATES, LIVE_STATES, STATES, STATUS, TRIPWIRES_FIELD, typed_field
from prereg.rundir.rows import number
from prereg.rundir.stop import StopReason

NUMERIC = (int, float)


@dataclass(frozen=True)
class GateSpec:
    """The run's gates (manifest.json's `gates`; a plan's `gates:`), evaluated by prereg/rundir/gates.py."""

    gpu_hours: float | None = None  # budget of allocated GPU-hours; None = no gate
    pace_limit_hours: float | None = None  # max projected wall time of the whole run
    pace_after_episodes: int = 10  # the pace tripwire is judged once this many episodes are done
    stall_factor: float = 4.0  # heartbeat age beyond this many median episode walls is a stall
    stall_min_s: float = 60.0  # ... and never below this many seconds
    startup_limit_s: float = 900.0  # start-up (model load, registered tripwires, workers) has its own limit
    warn_fraction: float = 0.8  # warn at this fraction of a limit
    decided: str | None = None  # "stop": stop once every decision rule on the arm is settled (prereg/stats/curtail.py)
    sequential: dict | None = None  # {p0, p1, alpha, beta}: a registered SPRT of the success rate (prereg/stats/sequential.py)
    tripwires: dict | None = None  # the shim's registered tripwires, run before the first episode (model.Tripwires.as_dict())

    @classmethod
    def from_dict(cls, d: object) -> "GateSpec":
        """A GateSpec from a file someone else wrote (a manifest's `gates`): a field of the wrong
        type (a string, a bool, NaN, a list) is left at its default, never passed on to crash a reader.
        The driver's flag names are accepted too."""
        if not isinstance(d, Mapping):
            return cls()
        kw: dict = {}
        for key, v in d.items():
            name = _GATE_ALIASES.get(key, key)
            if name in ("decided",):
                if isinstance(v, str):
                    kw[name] = v
            elif name in ("sequential", "tripwires"):
                if isinstance(v, dict):
                    kw[name] = v
            elif name == "pace_after_episodes":
                if type(v) is int and v >= 0:
                    kw[name] = v
            elif name in cls.__dataclass_fields__:
                x = number(v)
                if x is not None and x >= 0:
                    kw[name] = x
        return cls(**kw)

    def to_dict(self) -> dict:
        """manifest.json's `gates` (what the driver records; `from_dict` reads it back equal)."""
        return asdict(self)


_GATE_ALIASES = {"gpu_hours_gate": "gpu_hours", "pace_limit_h": "pace_limit_hours"}


@dataclass(frozen=True)
class Status:
    """status.json, typed: the driver writes `to_dict()` of one (the console's kill record too); a
    reader gets one from `read_snapshot` (`raw` keeps every field as read). The fields are in the
    order the driver writes them."""

    schema: int | None = None
    state: str | None = None
    run_id: str | None = None
    arm: str | None = None
    done: int | None = None
    total: int | None = None
    ok: int | None = None
    errors: int | None = None
    successes: int | None = None
    elapsed_s: float | None = None
    projected_wall_s: float | None = None
    eta_s: float | None = None
    pace: dict | None = None  # prereg.rundir.gates.PaceInputs.as_dict() + projected_wall_s, naive_projected_wall_s
    settled: dict | None = None  # curtailment (prereg/stats/curtail.py)
    sequential: dict | None = None  # the registered sequential test's decision (prereg/stats/sequential.py)
    arms: list | None = None  # a comparison run's two arms (written only in one) ...
    comparison: dict | None = None  # ... and its latest decision (prereg.stats.comparison.Decision.as_dict())
    gpu_hours: float | None = None
    gpu_hours_source: str | None = None
    gpu_busy_hours: float | None = None
    gpu_busy_source: str | None = None
    gpus: int | None = None
    mean_batch: float | None = None
    predict_rounds: int | None = None
    worker_crashes: int | None = None
    lost_seeds: list | None = None  # seeds (or [arm, seed]) that never got a row: aborted in flight, or a kill
    in_flight_seeds: list | None = None  # the seeds whose episodes were running when this was written
    cancelled_seeds: list | None = None  # in flight when the plan decided: cancelled, never rows, owed nothing
    executor: dict | None = None
    reason: str | None = None
    stop: StopReason | None = None
    gates: list | None = None  # the gate readings (prereg.rundir.gates.GateReading.as_dict() each)
    tripwires: dict | None = None  # the registered tripwires' record (TRIPWIRES_FIELD), once they ran
    pid: int | None = None
    updated_at: str | None = None
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    problems: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def reason_text(self) -> str:
        """The reason in words: the failure, or the stop reason, or ''."""
        return self.reason or (self.stop.text() if self.stop else "")

    @classmethod
    def of(cls, status: "Status | Mapping | None") -> "Status | None":
        """A Status from a Status, a status.json object or None (no status.json): None stays None."""
        return status if status is None or isinstance(status, Status) else cls.from_dict(status)

    @classmethod
    def from_dict(cls, d: object) -> "Status":
        if not isinstance(d, Mapping):
            return cls(problems=(f"{STATUS}: not a JSON object",))
        probs: list[str] = []
        kw = {name: typed_field(d, name, kinds, probs, STATUS) for name, kinds in _STATUS_FIELDS.items()}
        if kw["state"] is not None and kw["state"] not in STATES:
            probs.append(f"{STATUS}: state {kw['state'][:40]!r} is not one of {', '.join(STATES)}")
        stop = StopReason.from_dict(d.get("stop")) if d.get("stop") is not None else None
        return cls(**kw, stop=stop, raw=dict(d), problems=tuple(probs))

    def to_dict(self) -> dict:
        """status.json: every field in order (None as null; `arms`/`comparison` only in a comparison
        run, `tripwires` only once they ran), over whatever else `raw` held; a secret's shape in a text
        field (a reason quoting an exception or a STOP, a run id) redacted on its way out."""
        out = dict(self.raw)
        for name in _STATUS_ORDER:
            v = getattr(self, name)
            if v is None and name in _STATUS_ONLY_WITH and getattr(self, _STATUS_ONLY_WITH[name]) is None and name not in out:
                continue
            out[name] = v.as_dict() if isinstance(v, StopReason) else redacted(v) if isinstance(v, str) else v
        return out


_STATUS_FIELDS = {
    "schema": (int,), "state": (str,), "run_id": (str,), "arm": (str,), "done": (int,), "total": (int,), "ok": (int,),
    "errors": (int,), "successes": (int,), "elapsed_s": NUMERIC, "projected_wall_s": NUMERIC, "eta_s": NUMERIC,
    "pace": (dict,), "settled": (dict,), "sequential": (dict,), "arms": (list,), "comparison": (dict,),
    "gpu_hours": NUMERIC, "gpu_hours_source": (str,), "gpu_busy_hours": NUMERIC, "gpu_busy_source": (str,), "gpus": (int,),
    "mean_batch": NUMERIC, "predict_rounds": (int,), "worker_crashes": (int,), "lost_seeds": (list,),
    "in_flight_seeds": (list,), "cancelled_seeds": (list,), "executor": (dict,),
    "reason": (str,), "gates": (list,), TRIPWIRES_FIELD: (dict,), "pid": (int,), "updated_at": (str,),
}
_STATUS_ORDER = tuple(f for f in Status.__dataclass_fields__ if f not in ("raw", "problems"))
_STATUS_ONLY_WITH = {"arms": "arms", "comparison": "arms", TRIPWIRES_FIELD: TRIPWIRES_FIELD}  # written when that field is set


def status_stop(status: "Status | Mapping | None") -> StopReason | None:
    """The structured stop reason a status.json carries (None while nothing asked for a stop)."""
    status = Status.of(status)
    return status.stop if status is not None else None


def status_reason_text(status: "Status | Mapping | None") -> str:
    """status.json's reason in words: the failure, or the stop reason, or ''."""
    status = Status.of(status)
    return status.reason_text if status is not None else ""


def gpu_hours_source(status: "Status | Mapping | None") -> str | None:
    """What the GPU-hours figure is, in words, as the console and the posts show it: the driver's
    `gpu_hours_source` ('allocated (wall x 1 GPU held)'), or 'no GPU held' when the run holds none
    (the driver's words would read 'allocated (wall x 0 GPUs held)' beside 0.00)."""
    status = Status.of(status)
    if status is None:
        return None
    if status.gpus == 0:
        return "no GPU held"
    return status.gpu_hours_source or None
