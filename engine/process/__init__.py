"""The run's processes as the operating system sees them: which signals stop a run and how a worker
dies with its parent (signals.py), what a worker may see of the environment (environ.py), and the
driver's output kept off a terminal that can close (terminal.py). Imports nothing of the engine."""
