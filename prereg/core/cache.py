"""Where Fontaine keeps what it computed once and may reuse: `$FONTAINE_CACHE` (default ~/.cache/fontaine).

Its rooms: molmoact2-tiny/ (the tiny model the tests and demo build), reach/ (an env's share of reachable
seeds), designs/ (a comparison test's exact design, prereg/stats/paired_optimal.py). Everything here is
derived: a file that is missing, unreadable or not what its reader expects is computed again.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$FONTAINE_CACHE`, or ~/.cache/fontaine."""
    return Path(os.environ.get("FONTAINE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "fontaine"))
