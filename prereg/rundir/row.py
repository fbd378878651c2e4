"""A row as the engine makes it: one finished episode, typed and frozen (`Row`), from the worker that
ran it to the one line of rows.jsonl the driver writes.

One constructor for every row (`Row.episode`): an episode that ran (`error` None, status ok) and an
error row (why it could not: a predict that raised, a worker that died during it, a bug) are the
same type, built the same way, by the pool's workers (engine/workers/worker.py), the pool itself for a
worker that died (engine/workers/pool.py), and a Ray shard's pool; a shard renumbers its workers and ships
the video (`with_fields`), and the driver writes it once, naming the run and the arm (`written`).
What a row holds and how it is read is prereg/rundir/rows.py's (the schema, its field types, the
one classifier); a row is checked against that schema when it is made, so the engine never writes
a line that every reader would set aside as bad (a field of the wrong type is a ValueError naming it,
which the worker turns into an error row).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from prereg.rundir.files import dumps_line
from prereg.rundir.rows import OK, complete_row, row_problem

ERROR_STATUS = "error"  # the status of an error row (any status but OK reads as one)
IDENTITY = ("schema", "run_id", "arm", "seed", "worker", "status", "error")  # the row's own fields, not measured


@dataclass(frozen=True)
class Row:
    seed: int
    worker: int | str | None = None
    arm: str | None = None  # a comparison run's arm (the driver names a one-arm run's)
    error: str | None = None  # why the episode is an error row; None: it ran (status ok)
    fields: tuple[tuple[str, object], ...] = ()  # what the episode measured, by row field name

    @classmethod
    def episode(cls, seed: int, *, worker=None, arm: str | None = None, error: str | None = None, **fields) -> "Row":
        """The row of one episode. `fields` are what it measured (engine.workers.episode.run_episode's, the video,
        the wall time, a note), each a field of the row schema; they pass through JSON as they will be
        written (numpy values as numbers, NaN refused), so what is kept is what a reader reads back."""
        mixed = sorted(set(fields) & set(IDENTITY))
        if mixed:
            raise TypeError(f"{', '.join(mixed)}: a row's identity is given by name (seed, worker, arm, error)")
        try:  # numpy values become numbers; NaN or infinity is refused (it is not JSON)
            measured = json.loads(dumps_line(fields))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the row of seed {seed} cannot be written: {exc}") from None
        row = cls(seed, worker, arm, error, tuple(measured.items()))
        problem = row_problem(row.as_dict())
        if problem is not None:
            raise ValueError(f"the row of seed {seed} is not a row: {problem}")
        return row

    @property
    def status(self) -> str:
        return OK if self.error is None else ERROR_STATUS

    def get(self, key: str, default=None):
        if key in ("seed", "worker", "arm", "error", "status"):
            return getattr(self, key)
        return dict(self.fields).get(key, default)

    def with_fields(self, *, worker=..., **fields) -> "Row":
        """The same episode with a field changed: a shard's worker renumbered over the cluster, a video
        not shipped (`video=None`)."""
        merged = {**dict(self.fields), **fields}
        return replace(self, worker=self.worker if worker is ... else worker, fields=tuple(merged.items()))

    def as_dict(self) -> dict:
        out = {**dict(self.fields), "seed": self.seed, "worker": self.worker, "status": self.status, "error": self.error}
        if self.arm is not None:
            out["arm"] = self.arm
        return out

    def written(self, run_id: str, arm: str | None) -> dict:
        """The line the driver writes: every schema field (null when unknown), the run and the arm named."""
        return complete_row({**self.as_dict(), "run_id": run_id, "arm": arm})
