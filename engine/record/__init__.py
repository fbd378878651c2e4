"""The run's record, as the engine writes and keeps it: its configuration (config.py), manifest,
status and summary, its clock and pace, its stop requests, the predict trail, the tool's provenance
and the GPU meter. Nothing here runs an episode."""
