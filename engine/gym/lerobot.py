"""lerobot-eval on Fontaine's envs: an `EnvConfig` of type `fontaine` (issue 34).

    python -m engine.gym.lerobot --policy.path=CKPT --env.type=fontaine --env.task=boat-on-disk-v0 \\
        --eval.n_episodes=10 --eval.batch_size=1 --policy.device=cpu --output_dir=out

runs lerobot's own `lerobot-eval` (its `main`), with this config registered first: `--env.task` is
the id's part after `fontaine/` (`boat-on-disk-v0`, `pick-lift-v0`), the observations are
`observation.images.front`, `observation.images.wrist` and `observation.state` (rig degrees), the
action the six joint targets. Any other of lerobot's flags passes through.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig

import engine.gym  # noqa: F401 - registers fontaine/... with gymnasium
from engine.gym import NAMESPACE


@EnvConfig.register_subclass("fontaine")
@dataclass
class FontaineEnvConfig(EnvConfig):
    task: str | None = "boat-on-disk-v0"
    fps: int = 30
    episode_length: int = 900  # 30 s at 30 Hz
    image_size: int = 224
    units: str = "rig"
    features: dict = field(default_factory=dict)
    features_map: dict = field(default_factory=lambda: {
        "action": "action", "agent_pos": "observation.state",
        "pixels/front": "observation.images.front", "pixels/wrist": "observation.images.wrist"})

    def __post_init__(self):
        image = PolicyFeature(type=FeatureType.VISUAL, shape=(self.image_size, self.image_size, 3))
        self.features = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(6,)),
                         "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=(6,)),
                         "pixels/front": image, "pixels/wrist": image}

    @property
    def package_name(self) -> str:
        return "engine.gym"

    @property
    def gym_id(self) -> str:
        return f"{NAMESPACE}/{self.task}"

    @property
    def gym_kwargs(self) -> dict:
        return {"image_size": self.image_size, "units": self.units, "max_episode_steps": self.episode_length}


def main(argv: list[str] | None = None) -> None:
    """lerobot-eval, with the `fontaine` env type known."""
    from lerobot.scripts.lerobot_eval import main as lerobot_eval

    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    lerobot_eval()


if __name__ == "__main__":
    main()
