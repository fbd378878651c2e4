"""The engine's policies. Importing any of them may import lerobot (and through it transformers and
peft), whose deprecation warnings are theirs to fix and would otherwise open every driver.log and
every one-line refusal of a lerobot or MolmoAct2 run; they are silenced here, once, by message."""

import warnings

# lerobot 0.6.1's MolmoAct2 config calls a transformers helper deprecated in 5.5
warnings.filterwarnings("ignore", message=r"`rope_config_validation` is deprecated", category=FutureWarning)
# peft >= 0.22 (lerobot[molmoact2]'s, range <1) on transformers 5.5 (lerobot 0.6.1 caps it below 5.6);
# scripts/constraints.txt holds peft at 0.21.2, which does not warn: this is for an install without it
warnings.filterwarnings("ignore", message=r"Support for Transformers < [0-9.]+ is deprecated in PEFT", category=FutureWarning)
