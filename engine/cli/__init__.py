"""The command line, `fontaine-eval` (`python -m engine.cli`): flags parsed (parser.py), resolved
into a RunConfig from flags, a frozen plan or a run to resume (resolve.py), the convmap shim's
commands (convmap.py), and the run started (main.py)."""
