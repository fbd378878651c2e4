"""What a row means: the one classifier (`classify`: error, success, knock-away, engaged, quiet),
one outcome per episode (`episode_outcome`: placed, placed but its hold cut short, off the table,
carried, dropped, touched ...), and the one way of counting rows (`RowCounts`, `count_rows`).

Every consumer counts with these (the console's panels, the Discord posts, the driver's summary and
the frozen reads), so none of them can show a count that another does not. What a row is and how
rows.jsonl is read is prereg/rundir/rows.py's; which rows count (the last row of each planned seed)
is `rows.latest_rows` and its incremental twin, prereg/rundir/fold.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prereg.rundir.rows import ENGAGED_CM, KNOCK_AWAY_CM, OK, grasped_lifted, number, object_z_mm

# ---------------------------------------------------------------- the one classifier

ERROR, SUCCESS, KNOCK_AWAY, ENGAGED, QUIET = "error", "success", "knock_away", "engaged", "quiet"
OUTCOMES = (ERROR, SUCCESS, KNOCK_AWAY, ENGAGED, QUIET)  # the order that decides a row's one outcome



def is_error(row: dict) -> bool:
    """Any status other than "ok" (null included) is an error row."""
    return row.get("status") != OK


def classify(row: dict) -> tuple[str, bool, bool]:
    """(outcome, knock-away, engaged) of a row: its one outcome, by the order error > success >
    knock-away > engaged > quiet, and the two flags the secondary reads count.

    Any status other than "ok" (null included) is an error row, and an error row is never a
    success, a knock-away or engaged, whatever else it says. The distances decide knock-away
    and engaged (the definitions are on them); the row's flags stand in only when a distance
    is null.
    """
    get = row.get
    if get("status") != OK:
        return ERROR, False, False
    pf = get("progress_final_cm")
    t = type(pf)
    if (t is float and math.isfinite(pf)) or t is int:
        knock = pf <= KNOCK_AWAY_CM
    else:
        knock = get("knock_away") is True
    p = get("progress_cm")
    t = type(p)
    if (t is float and math.isfinite(p)) or t is int:
        engaged = p > ENGAGED_CM
    else:
        engaged = get("engaged") is True
    if get("success") is True:
        return SUCCESS, knock, engaged
    return (KNOCK_AWAY if knock else ENGAGED if engaged else QUIET), knock, engaged


def row_outcome(row: dict) -> str:
    """One word per row, for the per-seed grid."""
    return classify(row)[0]


# ---------------------------------------------------------------- one outcome per episode

# What happened in an episode, in one word, from the row's physics fields (schema 2 and 3). Decided
# in this order, the first that holds: error, success, hold unfinished, off the table, then (grasped)
# placed tipped, carried not placed, grasped then dropped, then (never grasped) knocked away,
# touched, quiet.
HOLD_UNFINISHED = "hold_unfinished"
OFF_TABLE = "off_table"
PLACED_TIPPED = "placed_tipped"
CARRIED = "carried_not_placed"
DROPPED = "grasped_dropped"
TOUCHED = "touched"
EPISODE_OUTCOMES = (ERROR, SUCCESS, HOLD_UNFINISHED, OFF_TABLE, PLACED_TIPPED, CARRIED, DROPPED, KNOCK_AWAY, TOUCHED,
                    QUIET)
OUTCOME_LABELS = {
    ERROR: "error", SUCCESS: "success", HOLD_UNFINISHED: "placed, hold unfinished", OFF_TABLE: "off the table",
    PLACED_TIPPED: "placed tipped",
    CARRIED: "carried not placed", DROPPED: "grasped then dropped", KNOCK_AWAY: "knocked away",
    TOUCHED: "touched", QUIET: "quiet",
}
OUTCOME_RULES = {  # the definitions, in words: the report prints them under its outcome table
    SUCCESS: "the env's success predicate held",
    HOLD_UNFINISHED: "the success test held at the end, for fewer ticks than its hold (success_streak > 0)",
    OFF_TABLE: "the object ended below the table top (off_table; else object_z_mm <= -10)",
    PLACED_TIPPED: "grasped, released, tipped, within 5 cm of the target",
    CARRIED: "grasped and carried >= 2 cm while held, or still held at the end",
    DROPPED: "grasped, then released after carrying < 2 cm",
    KNOCK_AWAY: "never grasped; progress_final_cm <= -1",
    TOUCHED: "never grasped; the arm touched the object (touched; else progress_cm > 1)",
    QUIET: "none of the above",
}
OFF_TABLE_Z_MM = -10.0  # a row without `off_table`: the object's base this far below the table top fell off
PLACED_NEAR_CM = 5.0  # placed: its final distance to the target at most this
CARRIED_MIN_CM = 2.0  # carried: moved at least this far (XY) while held


def episode_outcome(row: dict, classified: tuple[str, bool, bool] | None = None) -> str:
    """The one outcome of an episode (EPISODE_OUTCOMES), by the order above.

    A row without `success_streak` (schema 1 and 2) never reads as a hold unfinished. A row without
    the grasp fields (schema 1) is never grasped, so its outcome is `classify`'s
    order (error > success > knock-away > engaged > quiet) with two refinements: a boat that
    ended below the table is off the table, and engaged reads as touched. `classified`, when
    given, is `classify(row)` already computed."""
    outcome, knock, engaged = classified if classified is not None else classify(row)
    if outcome in (ERROR, SUCCESS):
        return outcome
    get = row.get
    streak = get("success_streak")
    if type(streak) is int and streak > 0:
        return HOLD_UNFINISHED
    off = get("off_table")
    if off is None:
        z = object_z_mm(row)
        off = z is not None and z <= OFF_TABLE_Z_MM
    if off is True:
        return OFF_TABLE
    if grasped_lifted(row) is True:
        dist = number(get("dist_final_cm"))
        if (get("released") is True and get("tipped") is True and dist is not None
                and dist <= PLACED_NEAR_CM):
            return PLACED_TIPPED
        carried = number(get("carried_cm"))
        if get("released") is not True or (carried is not None and carried >= CARRIED_MIN_CM):
            return CARRIED
        return DROPPED
    if knock:
        return KNOCK_AWAY
    touched = get("touched")
    if touched is True or (touched is None and engaged):
        return TOUCHED
    return QUIET


def outcome_counts(rows) -> dict[str, int]:
    """{outcome: rows} over EPISODE_OUTCOMES, every outcome present (0 when none)."""
    out = dict.fromkeys(EPISODE_OUTCOMES, 0)
    for row in rows:
        out[episode_outcome(row)] += 1
    return out


def contribution(row: dict, classified: tuple[str, bool, bool] | None = None) -> tuple:
    """What one row adds to the counts (`RowCounts`): (outcome, knock-away, engaged, tipped, reset
    strikes, predicts, zero-fallbacks, mask interventions, episode outcome). Knock-away, engaged and
    tipped count ok rows only (classify gives an error row neither); reset strikes count every row
    (a failed reset happens before the episode, whatever it did); predicts, zero-fallbacks and mask
    interventions count every row that reports them (an error row's predicts were spent)."""
    c = classified if classified is not None else classify(row)
    get = row.get
    v = get("reset_strikes")
    strikes = v if type(v) is int and v > 0 else 0
    v = get("predicts")
    pr = v if type(v) is int else 0
    v = get("zero_fallbacks")
    zf = v if type(v) is int else 0
    v = get("mask_violations")
    mv = v if type(v) is int else 0
    return (c[0], c[1], c[2], c[0] != ERROR and get("tipped") is True, strikes, pr, zf, mv, episode_outcome(row, c))


@dataclass
class RowCounts:
    """The counts of a set of rows, folded in with `add_many`: what every consumer shows.

    `rows` = every row; `errors` = rows whose status is not "ok"; `ok` = the rest. Successes,
    knock-aways, engaged, quiet and tipped count ok rows only. Reset strikes count every row
    (a failed reset happens before the episode, whatever the episode did); predicts,
    zero-fallbacks and mask interventions count every row that reports them (an error row's
    predicts were spent). `by_outcome` counts every row by its `episode_outcome`.
    """

    rows: int = 0
    ok: int = 0
    errors: int = 0
    successes: int = 0
    knock_aways: int = 0
    engaged: int = 0
    quiet: int = 0
    tipped: int = 0
    reset_strikes: int = 0
    rows_with_reset_strikes: int = 0
    predicts: int = 0
    zero_fallbacks: int = 0
    mask_violations: int = 0
    by_outcome: dict = field(default_factory=lambda: dict.fromkeys(EPISODE_OUTCOMES, 0))  # episode_outcome

    def add(self, row: dict) -> str:
        """Fold in one row; its outcome."""
        out: list = []
        self.add_many((row,), out)
        return out[0][0]

    def add_many(self, rows, outcomes: list | None = None) -> None:
        """Fold rows in, each by its `contribution`. `outcomes`, when given, receives each row's
        (outcome, knock, engaged) in order."""
        if outcomes is None:
            self.apply_many([contribution(row) for row in rows])
            return
        parts = []
        for row in rows:
            c = classify(row)
            outcomes.append(c)
            parts.append(contribution(row, c))
        self.apply_many(parts)

    def apply_many(self, parts) -> None:
        """Count many rows' `contribution`s in (one loop, counters in locals: 100k rows in a fraction of a
        second). A part may carry more after its contribution's nine (prereg/rundir/fold.py's do)."""
        n = ok = succ = knocks = eng = quiet = tipped = strikes = strike_rows = pr = zf = mv = 0
        by_outcome = self.by_outcome
        for part in parts:
            outcome, knock, engaged, tip, strike, p, z, m, eo = part[0], part[1], part[2], part[3], part[4], \
                part[5], part[6], part[7], part[8]
            n += 1
            by_outcome[eo] += 1
            strikes += strike
            strike_rows += strike > 0
            pr += p
            zf += z
            mv += m
            if outcome == ERROR:
                continue
            ok += 1
            succ += outcome == SUCCESS
            quiet += outcome == QUIET
            knocks += knock
            eng += engaged
            tipped += tip
        self.rows += n
        self.ok += ok
        self.errors += n - ok
        self.successes += succ
        self.knock_aways += knocks
        self.engaged += eng
        self.quiet += quiet
        self.tipped += tipped
        self.reset_strikes += strikes
        self.rows_with_reset_strikes += strike_rows
        self.predicts += pr
        self.zero_fallbacks += zf
        self.mask_violations += mv

    def apply(self, part: tuple, sign: int = 1) -> None:
        """Count one row's `contribution` in (sign 1) or out again (sign -1: a later row of its seed replaced it)."""
        outcome, knock, engaged, tip, strike, p, z, m, eo = part[:9]
        self.rows += sign
        self.by_outcome[eo] += sign
        self.reset_strikes += sign * strike
        self.rows_with_reset_strikes += sign * (strike > 0)
        self.predicts += sign * p
        self.zero_fallbacks += sign * z
        self.mask_violations += sign * m
        if outcome == ERROR:
            self.errors += sign
            return
        self.ok += sign
        self.successes += sign * (outcome == SUCCESS)
        self.quiet += sign * (outcome == QUIET)
        self.knock_aways += sign * knock
        self.engaged += sign * engaged
        self.tipped += sign * tip

    @property
    def zero_fallback_rate(self) -> float | None:
        return self.zero_fallbacks / self.predicts if self.predicts else None


def count_rows(rows) -> RowCounts:
    c = RowCounts()
    c.add_many(rows)
    return c
