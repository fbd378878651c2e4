"""The joint-convention shim (the lab notes' convmap): sim radians to rig degrees and back (shim.py),
its fit from seam statistics (fit.py), and the mandatory pre-GPU tripwires that judge it (tripwires.py)."""
