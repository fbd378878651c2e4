"""The bounds of a run's seeds, in one place: `fontaine-eval --seeds/--seed/--num-seeds` (engine/cli_parser.py)
and a pre-registration's `protocol.seeds` (prereg/document/read.py) refuse the same plans, before any
seed list is expanded."""

MAX_SEEDS = 100_000  # seeds in one run
MAX_SEED = 2**31 - 1  # the largest seed: MuJoCo/numpy seed range
