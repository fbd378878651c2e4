"""The run: the driver's loop (driver.py), what a frozen plan decides after each row (decisions.py),
and the registered tripwires run before the first episode (tripwires.py)."""
