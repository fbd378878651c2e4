"""Suite-wide settings. In CI (CI=true) hypothesis draws the same examples on every run, so a
submission is judged on the code, not on the luck of the draw; locally it keeps exploring."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
