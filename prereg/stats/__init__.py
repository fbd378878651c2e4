"""The statistics: the frozen reads of one arm and the paired reads across arms (`reads`), comparison runs
(`comparison`: the anytime-valid tests, the decision and its path; `step`: STEP's policy; `operating`:
their operating characteristics before spending; `comparison_report`), the sequential test (`sequential`),
curtailment (`curtail`), power (`power`), the verdict engine (`verdict`), the charts (`chart`), and the
real read of trials on the rig paired with sim seeds (`real_read`, its math `real_math`, its proving ground `real_sim`).
Imports prereg.core, prereg.rundir and prereg.document, never the outputs."""
