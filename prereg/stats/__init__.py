"""The statistics: the frozen reads of one arm and the paired reads across arms (`reads`), comparison runs
(`comparison`: the anytime-valid tests, the decision and its path; `step`: STEP's policy; `operating`:
their operating characteristics before spending; `comparison_report`), the sequential test (`sequential`),
curtailment (`curtail`), power (`power`), the verdict engine (`verdict`) and the charts (`chart`).
Imports prereg.core, prereg.rundir and prereg.document, never the outputs."""
