"""The state-copy baseline: every chunk holds the joints where they are.

It is the anchor of the first-action tripwire (a policy that changes nothing scores this), a
floor for any learned policy (it never succeeds, never knocks the boat away), and, being served
in the driver like a GPU model, the cheapest way to exercise batched predicts end to end.
"""

from __future__ import annotations

import numpy as np

from engine.policies.base import Chunk, Observation


class HoldPolicy:
    name = "hold"
    needs_images = False
    needs_privileged = False
    serve_in_driver = True

    def __init__(self, chunk_horizon: int = 30):
        self.chunk_horizon = chunk_horizon

    def describe(self) -> dict:
        return {"policy": self.name, "chunk_horizon": self.chunk_horizon}

    def predict_batch(self, observations: list[Observation]) -> list[Chunk]:
        n = len(observations)
        return [
            Chunk(np.tile(np.asarray(o.state_rad, dtype=np.float64), (self.chunk_horizon, 1)), batch_size=n)
            for o in observations
        ]
