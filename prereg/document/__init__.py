"""The pre-registration document: reading it (`read`: load, load_valid, parse), its layout and markers
(`layout`), the model a machine reads from it (`model`), its validation (`validation` builds the model
from `check_arms` and `check_plan`, with positioned problems from `fields`), the registered comparison
(`comparison_spec`), the rule grammar (`rules`), freezing and amending (`seal`), the template and the
launch guard (`launch`). Imports prereg.core and prereg.rundir, never the statistics or the outputs."""
