"""`python -m engine.cli ...` is `fontaine-eval ...` (the console launches runs this way)."""

import sys

from engine.cli.main import main

sys.exit(main())
