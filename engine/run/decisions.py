"""What a frozen plan decides after each row of a run: curtailment, a sequential test, a comparison.

The driver asks `PlanDecisions.after_row` after every row it records. A one-arm run launched from
a frozen pre-registration reads its decision rules (prereg/stats/curtail.py: are they settled,
whatever the seeds still to run do?) and its registered sequential test (prereg/stats/sequential.py);
a comparison run reads its registered comparison (prereg/stats/comparison.py) on the plan prefix
both arms have. In a crossed design (issue 48) each reads the read variant's rows, or, when the plan's
read_variant is `pooled`, each seed's share of the pooled variants solved (prereg/stats/variants_decide.py:
`sequential_check`, `comparison_check`); the decision rules count base's rows then. The answer is a
stop reason (`decided`) when the plan says the run stops there, else
None; the latest readings (`settled`, `sequential`, `comparison`) go into status.json. A statistic
that cannot be read is said in the log and never ends a run.
"""

from __future__ import annotations

from pathlib import Path

from engine.record.config import RunConfig, comparison_spec
from prereg import rundir as rd
from prereg.rundir.rows import read_as_success, rows_of_variant


class PlanDecisions:
    def __init__(self, cfg: RunConfig, run_dir: Path, log):
        self.cfg, self.run_dir, self.log = cfg, run_dir, log
        self.settled: dict | None = None  # curtailment: which frozen rules are settled
        self.sequential: dict | None = None  # the registered sequential test's decision
        self.comparison: dict | None = None  # a comparison run's latest decision
        self._config: dict | None = None  # cfg.as_dict(), once: what the variant-aware checks read of the run

    def _as_read(self, rows: list[dict]) -> list[dict]:
        """The rows as the plan reads a success (its `success_field`: the env's own success, or Fontaine's),
        every variant's: the sequential test and the comparison pick the variants they read (the read
        variant's rows, or each seed's share of the pooled variants: prereg.stats.variants_decide)."""
        field = self.cfg.success_field
        return rows if field == "success" else [read_as_success(r, field) for r in rows]

    @property
    def config(self) -> dict:
        if self._config is None:
            self._config = self.cfg.as_dict()
        return self._config

    def after_row(self, rows: list[dict], *, stopping: bool, remaining: int) -> rd.StopReason | None:
        """After a row: the stop the plan asks for now (None: none). With `gates: {decided: stop}` a
        settled plan stops the run (reason `decided`); without it status.json says so."""
        if self.cfg.arms:
            return self.comparison_after(rows, remaining)
        if self.cfg.prereg is None:
            return None
        from prereg.stats.curtail import check_run, decided_detail
        from prereg.stats.variants_decide import sequential_check

        rows = self._as_read(rows)
        if not (self.settled or {}).get("all"):
            try:  # the decision rules count the counted variant's rows (base's under a pooled read)
                self.settled = check_run(self.cfg.prereg, self.cfg.arm, rows_of_variant(rows, self.cfg.counted_variant),
                                         self.run_dir)
            except Exception as exc:  # noqa: BLE001 - information must never end a run
                self.log(f"curtailment check failed ({type(exc).__name__}: {exc}); the run goes on")
                self.settled = None
        if self.settled and self.settled["all"] and self.cfg.gates.decided == "stop":
            return rd.StopReason(rd.BY_DECIDED, decided_detail(self.settled))
        if self.sequential is None and not stopping:
            try:
                self.sequential = sequential_check(self.cfg.gates.sequential, rows, self.config, self.cfg.seeds)
            except Exception as exc:  # noqa: BLE001 - a statistic that cannot be read must never end a run
                self.log(f"sequential check failed ({type(exc).__name__}: {exc}); the run goes on")
            if self.sequential is not None:
                return rd.StopReason(rd.BY_DECIDED, "(sequential) " + self.sequential["text"])
        return None

    def prepare(self) -> None:
        """Before any episode: what the comparison computes once per process (test sprt's exact design,
        seconds at a few hundred seeds), so it is not spent after the first row while workers wait."""
        if self.cfg.comparison is None:
            return
        from prereg.stats.comparison import prepare
        from prereg.stats.paired_optimal import announcing

        try:
            with announcing(self.log):  # a design not kept on this machine yet: said in the log as it starts
                prepare(comparison_spec(self.cfg.comparison), self.cfg.seeds)
        except Exception as exc:  # noqa: BLE001 - a statistic that cannot be read must never end a run
            self.log(f"comparison check failed ({type(exc).__name__}: {exc}); the run goes on")

    def comparison_after(self, rows: list[dict], remaining: int) -> rd.StopReason | None:
        """A comparison run: the registered comparison read on the plan prefix both arms have (the read
        variant's rows, or the pooled rates: prereg.stats.variants_decide.comparison_check); a decision
        that stops the run stops it at this row."""
        if self.cfg.comparison is None or (self.comparison or {}).get("outcome") not in (None, "void"):
            return None
        from prereg.stats.variants_decide import comparison_check

        try:
            decision = comparison_check(comparison_spec(self.cfg.comparison), self._as_read(rows), self.config,
                                        self.cfg.seeds)
        except Exception as exc:  # noqa: BLE001 - a statistic that cannot be read must never end a run
            self.log(f"comparison check failed ({type(exc).__name__}: {exc}); the run goes on")
            return None
        if decision is None:
            return None
        before = (self.comparison or {}).get("text")
        self.comparison = {**decision.as_dict(), "episodes_saved": decision.episodes_saved}
        if decision.stops_run and remaining > 0:  # decided on the last pair: the run is simply done
            return rd.StopReason(rd.BY_DECIDED, "(comparison) " + decision.text)
        if decision.text != before:  # a void read is re-read at every row: said once, and when it changes
            self.log(f"comparison: {decision.text}")
        return None
