"""The Discord notifier: its own process (`fontaine-notify`), one per runs folder; no Textual.

    messages.py  which posts a run is owed, and their words (pure: reads the run directory)
    ledger.py    posts.jsonl, the in-flight marker, the notifier's folder and its flock
    webhook.py   the webhook URL's setting, and keeping its secret out of every output
    sender.py    delivery to the webhook: the queue, the one retry policy, the states and
                 their one wording (status_line)
    service.py   the process: main() for fontaine-notify, the loop over the folder's runs
    link.py      the console's side: start the process, read its status, ask for a test post

It imports nothing of the console outside this package and nothing of the engine: runs,
states and liveness come from prereg (prereg/rundir/, prereg/rundir/discovery.py).
tests/test_import_rules.py holds it to that.
"""
