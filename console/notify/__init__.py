"""The Discord notifier: its own process (`fontaine-notify`), one per runs folder; no Textual.

    snapshot.py  what a post is read from: a run's small files, its rows' fold (prereg/rundir/fold.py),
                 its state by the shared rules (prereg/rundir/runstate.py)
    messages.py  which posts a run is owed, and when (pure)
    wording.py   the posts' texts: the post itself, a policy's facts, the gates, the report's head
    ledger.py    posts.jsonl, the in-flight marker, the notifier's folder and its flock, and each
                 run's book (its rows followed incrementally)
    webhook.py   the webhook URL's setting, and keeping its secret out of every output
    delivery.py  the states, the one retry policy, and their one wording (status_line)
    outbox.py    scheduling: which post is owed when, and the queue they wait in
    courier.py   delivery: one attempt at a time to the webhook, retries and their backoff, the
                 checks that end an outage's wait early, a log line per failed attempt, the state
    sender.py    Notifier: the two put together, what the service calls
    service.py   the process: main() for fontaine-notify, the loop over the folder's runs
    link.py      the console's side: start the process, read its status, ask for a test post

It imports nothing of the console outside this package and nothing of the engine: runs,
states and liveness come from prereg (prereg/rundir/: discovery.py, runstate.py, fold.py).
tests/test_import_rules.py holds it to that.
"""
