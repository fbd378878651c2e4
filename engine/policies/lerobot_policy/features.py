"""Which sim input feeds which of a lerobot checkpoint's features, and the refusal when one cannot be fed.

A lerobot checkpoint names its inputs in `config.json` (`input_features`: `observation.images.<cam>`
VISUAL, `observation.state` STATE, sometimes `observation.environment_state` ENV) and its output
(`action`). The sim offers its cameras (the env's policy image inputs: `front`, `wrist` for the
built-ins) and the arm's 6 joints. By default a feature is fed by name: `observation.images.front`
by the camera `front`, `observation.state` by the joints. A declared mapping (`--lerobot-map
FEATURE=SOURCE`, or an arm's `features:`) names the source of a feature whose name differs, e.g.
`observation.images.top=front`. Everything here is pure: the config is read duck-typed.
"""

from __future__ import annotations

from dataclasses import dataclass

from prereg.core.errors import UsageError

STATE_SOURCE = "state"  # the arm's 6 joints (LeRobot calibrated degrees, through the joint-convention shim)
IMAGE_PREFIX = "observation.images."
STATE_FEATURE = "observation.state"
ACTION_FEATURE = "action"
N_JOINTS = 6


class FeatureError(UsageError):
    """A checkpoint whose features the scene cannot feed: one line naming the feature (exit 2)."""


@dataclass(frozen=True)
class FeaturePlan:
    """feature -> source for every input the checkpoint reads; the action's width."""

    images: tuple[tuple[str, str], ...]  # (feature, sim camera), in the checkpoint's order
    state: str | None  # the STATE feature fed by the joints (None: the checkpoint reads no state)
    image_shapes: tuple[tuple[int, int, int], ...]  # (C, H, W) per image feature
    action_dim: int

    def as_dict(self) -> dict:
        out = {feature: camera for feature, camera in self.images}
        if self.state:
            out[self.state] = STATE_SOURCE
        return out


def parse_map(tokens) -> dict[str, str]:
    """`FEATURE=SOURCE` tokens (or a mapping) -> {feature: source}; a malformed one is one line."""
    if isinstance(tokens, dict):
        items = [(str(k), str(v)) for k, v in tokens.items()]
    else:
        items = []
        for tok in tokens or ():
            feature, eq, source = str(tok).partition("=")
            if not eq or not feature.strip() or not source.strip():
                raise FeatureError(f"bad --lerobot-map {tok!r}: expected FEATURE=SOURCE, e.g. "
                                   "observation.images.top=front or observation.state=state")
            items.append((feature.strip(), source.strip()))
    out: dict[str, str] = {}
    for feature, source in items:
        if feature in out:
            raise FeatureError(f"--lerobot-map names {feature} twice")
        out[feature] = source
    return out


def _kind(ft) -> str:
    t = getattr(ft, "type", None)
    return str(getattr(t, "name", t)).upper()


def plan_features(config, cameras, declared: dict[str, str] | None = None) -> FeaturePlan:
    """The plan for a checkpoint's `config` fed by a scene with these `cameras` (None: any); FeatureError names
    the first feature it cannot feed (a camera the scene lacks, a state or action that is not 6-D,
    an input kind the sim has no source for)."""
    declared = dict(declared or {})
    cameras = None if cameras is None else tuple(cameras)
    inputs = dict(getattr(config, "input_features", None) or {})
    outputs = dict(getattr(config, "output_features", None) or {})
    unknown = sorted(set(declared) - set(inputs))
    if unknown:
        raise FeatureError(f"--lerobot-map names {unknown[0]}, which the checkpoint does not read "
                           f"(it reads {', '.join(inputs) or 'nothing'})")
    images, shapes, state = [], [], None
    for feature, ft in inputs.items():
        kind, shape = _kind(ft), tuple(int(x) for x in getattr(ft, "shape", ()) or ())
        source = declared.get(feature)
        if kind == "VISUAL":
            camera = source or (feature[len(IMAGE_PREFIX):] if feature.startswith(IMAGE_PREFIX) else feature)
            if cameras is not None and camera not in cameras:
                raise FeatureError(f"the checkpoint's {feature} needs a camera {camera!r} the scene lacks "
                                   f"(it has {', '.join(cameras) or 'none'}); map it with "
                                   f"--lerobot-map {feature}=CAMERA")
            if len(shape) != 3 or shape[0] != 3:
                raise FeatureError(f"the checkpoint's {feature} has shape {list(shape)}; the sim's cameras give RGB (3, H, W)")
            images.append((feature, camera))
            shapes.append(shape)
        elif kind == "STATE" or (source == STATE_SOURCE and kind != "VISUAL"):
            if (source or STATE_SOURCE) != STATE_SOURCE:
                raise FeatureError(f"the checkpoint's {feature} is a state; the sim feeds it only from "
                                   f"'{STATE_SOURCE}', not {source!r}")
            if shape != (N_JOINTS,):
                raise FeatureError(f"the checkpoint's {feature} is {_dims(shape)}; the SO-101 sim's state is "
                                   f"{N_JOINTS}-D (shoulder_pan .. gripper)")
            if state is not None:
                raise FeatureError(f"the checkpoint's {feature} and {state} would both be fed by the joints")
            state = feature
        else:
            raise FeatureError(f"the checkpoint reads {feature} ({kind}), which the sim cannot feed "
                               "(it has its cameras and the 6 joints)")
    action = outputs.get(ACTION_FEATURE)
    if action is None:
        raise FeatureError(f"the checkpoint has no '{ACTION_FEATURE}' output (it has {', '.join(outputs) or 'none'})")
    action_shape = tuple(int(x) for x in getattr(action, "shape", ()) or ())
    if action_shape != (N_JOINTS,):
        raise FeatureError(f"the checkpoint's {ACTION_FEATURE} is {_dims(action_shape)}; the SO-101 sim takes "
                           f"{N_JOINTS}-D joint targets")
    return FeaturePlan(tuple(images), state, tuple(shapes), N_JOINTS)


def _dims(shape: tuple) -> str:
    return f"{shape[0]}-D" if len(shape) == 1 else f"shaped {list(shape)}"
