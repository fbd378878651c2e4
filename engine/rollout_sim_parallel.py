"""`python -m engine.rollout_sim_parallel ...`: the seeds' name for `fontaine-eval`."""

import sys

from engine.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
