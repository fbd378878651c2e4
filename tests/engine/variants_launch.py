"""`python -m tests.engine.variants_launch ARGS` is `fontaine-eval ARGS` with a plan's crossed design
(issue 48) supplied from FONTAINE_TEST_CROSSED (JSON: the LaunchSpec fields variants, read_variant,
pool_cameras) to every launch from a plan, for as long as prereg/document does not read
`protocol.variants` itself (prereg.document.fields.PROTOCOL_KEYS; the prereg side is another branch's).
tests/engine/test_variants_run.py writes them in the plan instead once it does, and this module goes.
The engine is untouched: only the plan's reading is stood in for, in the driver (workers get the config).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

import engine.cli.main  # first: it sets MUJOCO_GL before anything imports mujoco

CROSSED = "FONTAINE_TEST_CROSSED"


def install(environ=os.environ) -> None:
    crossed = json.loads(environ.get(CROSSED) or "{}")
    if not crossed:
        return
    from prereg.document import launch

    resolve_launch = launch.resolve_launch

    def with_variants(path, arm_name):
        spec = resolve_launch(path, arm_name)
        return dataclasses.replace(spec, variants=tuple(crossed.get("variants", ())),
                                   read_variant=crossed.get("read_variant", "base"),
                                   pool_cameras=bool(crossed.get("pool_cameras", False)))

    launch.resolve_launch = with_variants  # engine/cli/resolve.py imports it from the module at each launch


if __name__ == "__main__":
    install()
    sys.exit(engine.cli.main.main())
