"""The bounds of a run, in one place: `fontaine-eval`'s flags (engine/cli/parser.py), a pre-registration's
`protocol` (prereg/document/check_arms.py) and a resumed run's manifest (engine/cli/resolve.py) refuse
the same plans, before any seed list is expanded or any worker started."""

MAX_SEEDS = 100_000  # seeds in one run
MAX_SEED = 2**31 - 1  # the largest seed: MuJoCo/numpy seed range
MAX_WORKERS = 256  # worker processes of one run (a resume honoured 100,000 until the OOM killer came)
MIN_EPISODE_SECONDS = 0.1  # a few control ticks at any rate a scene runs at (0.0001 s ran no tick at all)
MAX_EPISODE_SECONDS = 3600.0  # one hour of simulated time per episode
# SIGTERM's grace (`--term-grace-s`): the episodes in flight may finish at their boundary for this long,
# then are abandoned (owed to --resume), so the run reads `stopped` before a scheduler's SIGKILL (SLURM's
# KillWait and Kubernetes' default grace are 30 s)
DEFAULT_TERM_GRACE_S = 20.0
MAX_TERM_GRACE_S = 3600.0
