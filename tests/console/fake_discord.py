"""A fake Discord webhook API on loopback, for testing with the real discord.py client.

It runs an aiohttp server on 127.0.0.1 (a random port, kept across stop/start so an outage can
end) in its own thread, records every request, and answers like Discord: a message object with
a fresh id, `Content-Type: application/json` exactly (discord.py does not parse
`application/json; charset=utf-8` as JSON). Failures are scripted: `fail_next(429,
retry_after=..)` (with the `Via` header discord.py needs to retry a 429 itself, or without it),
`fail_next(500)` (`method="POST"`: posts fail, a GET of the webhook answers), `stop()` for an
outage (connection refused) until `start()`, and
`delay_next(s)`: the message is created when the request arrives (as Discord does) but the
answer comes `s` seconds later (a slow send that a shutdown can catch on the wire). A GET of
the webhook (discord.py's `Webhook.fetch`, a cheap validity check) answers the webhook object
or the scripted failure.

Point discord.py at it with `discord.http.Route.BASE = fake.base` (each request builds a new
Route, so the patch takes effect). Its access log is off: its paths carry the token.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from itertools import count

from aiohttp import web


@dataclass
class Request:
    method: str
    path: str
    query: dict
    status: int  # what the fake answered
    payload: dict | None = None
    files: list[tuple[str, bytes]] = field(default_factory=list)  # (filename, bytes)
    at: float = field(default_factory=time.time)  # when it arrived (time.time, as a log record's `created`)


@dataclass
class Failure:
    status: int
    retry_after: float = 0.0
    via: bool = True
    method: str | None = None  # only a request of this method gets it (None: any)


class FakeDiscord:
    def __init__(self):
        self.requests: list[Request] = []
        self.messages: list[Request] = []  # accepted posts, in the order they arrived
        self._failures: list[Failure] = []
        self._delays: list[float] = []
        self._released = asyncio.Event()  # set: every late answer goes now (release_delays)
        self._ids = count(1_300_000_000_000_000_001)
        self._cond = threading.Condition()
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}/api/v10"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-discord", daemon=True)
        self._thread.start()
        self._runner: web.AppRunner | None = None

    # --- control -----------------------------------------------------------------------

    def start(self) -> "FakeDiscord":
        self._call(self._start())
        return self

    def stop(self) -> None:
        """An outage: the port refuses connections until start()."""
        self._call(self._stop())

    def close(self) -> None:
        self.stop()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def fail_next(self, status: int, *, retry_after: float = 0.0, via: bool = True, times: int = 1,
                  method: str | None = None) -> None:
        """The next `times` requests (of `method` only, if given: a POST failing while a GET of the
        webhook answers) get `status`."""
        with self._cond:
            self._failures.extend(Failure(status, retry_after, via, method) for _ in range(times))

    def delay_next(self, seconds: float, *, times: int = 1) -> None:
        with self._cond:
            self._delays.extend([seconds] * times)

    def release_delays(self) -> None:
        """Every late answer still waiting goes now, and later ones are not held (a test that made
        Discord slow ends without waiting out its delays)."""
        with self._cond:
            self._delays.clear()
        self._loop.call_soon_threadsafe(self._released.set)

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        """Wait until predicate(self) holds (checked on every request)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    def wait_messages(self, n: int, timeout: float = 10.0) -> bool:
        return self.wait_for(lambda f: len(f.messages) >= n, timeout)

    def footers(self) -> list[str]:
        return [m.payload["embeds"][0]["footer"]["text"] for m in self.messages if m.payload.get("embeds")]

    # --- server ------------------------------------------------------------------------

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    async def _start(self) -> None:
        if self._runner is not None:
            return
        app = web.Application()
        app.router.add_route("*", "/api/v10/webhooks/{webhook_id}/{token}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self._runner = runner

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        payload, files = await _read_body(request)
        with self._cond:
            failure = next((f for f in self._failures if f.method in (None, request.method)), None)
            if failure is not None:
                self._failures.remove(failure)
        if failure is not None:
            return self._record(request, payload, files, failure.status, _failure_response(failure))
        if request.method == "GET":
            return self._record(request, payload, files, 200, _json(200, _webhook(request.match_info)))
        if request.method != "POST":
            return self._record(request, payload, files, 405, _json(405, {"message": "405: Method Not Allowed", "code": 0}))
        msg_id = str(next(self._ids))
        body = _message(msg_id, request.match_info["webhook_id"], payload or {}, files)
        with self._cond:
            delay = self._delays.pop(0) if self._delays else 0.0
        response = self._record(request, payload, files, 200, _json(200, body), accepted=True)
        if delay:  # created already; only the answer is late
            try:
                await asyncio.wait_for(self._released.wait(), delay)
            except TimeoutError:
                pass
        return response

    def _record(self, request, payload, files, status, response, accepted=False):
        rec = Request(request.method, request.path, dict(request.query), status, payload, files)
        with self._cond:
            self.requests.append(rec)
            if accepted:
                self.messages.append(rec)
            self._cond.notify_all()
        return response


async def _read_body(request: web.Request) -> tuple[dict | None, list[tuple[str, bytes]]]:
    if request.content_type.startswith("multipart/"):
        payload, files = None, []
        reader = await request.multipart()
        async for part in reader:
            data = await part.read()
            if part.name == "payload_json":
                payload = json.loads(data)
            else:
                files.append((part.filename, bytes(data)))
        return payload, files
    raw = await request.read()
    return (json.loads(raw) if raw else None), []


def _failure_response(f: Failure) -> web.Response:
    if f.status == 429:
        headers = {"Retry-After": f"{f.retry_after:g}", "X-RateLimit-Scope": "user"}
        if f.via:
            headers["Via"] = "1.1 google"
        return _json(429, {"message": "You are being rate limited.", "retry_after": f.retry_after, "global": False},
                     headers)
    return _json(f.status, {"message": f"{f.status}: scripted failure", "code": 0})


def _json(status: int, obj: dict, headers: dict | None = None) -> web.Response:
    return web.Response(status=status, body=json.dumps(obj).encode(),
                        headers={"Content-Type": "application/json", **(headers or {})})


def _webhook(match: dict) -> dict:
    """The webhook object a GET /webhooks/{id}/{token} answers."""
    return {"id": match["webhook_id"], "type": 1, "name": "Fontaine", "avatar": None, "token": match["token"],
            "channel_id": "1200000000000000002", "guild_id": "1200000000000000001", "application_id": None}


def _message(msg_id: str, webhook_id: str, payload: dict, files: list[tuple[str, bytes]]) -> dict:
    """A message object as Discord returns it for `?wait=true`."""
    return {
        "id": msg_id, "type": 0, "channel_id": "1200000000000000002", "webhook_id": webhook_id,
        "author": {"id": webhook_id, "username": "Fontaine", "discriminator": "0000", "avatar": None, "bot": True},
        "content": payload.get("content") or "", "embeds": payload.get("embeds") or [],
        "attachments": [
            {"id": str(1_400_000_000_000_000_000 + i), "filename": name, "size": len(data),
             "url": f"https://cdn.discordapp.com/attachments/1/{i}/{name}",
             "proxy_url": f"https://media.discordapp.net/attachments/1/{i}/{name}"}
            for i, (name, data) in enumerate(files)
        ],
        "mentions": [], "mention_roles": [], "mention_everyone": False, "pinned": False, "tts": False,
        "timestamp": "2026-11-30T08:00:00.000000+00:00", "edited_timestamp": None,
        "flags": 0, "components": [],
    }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a hand-made run directory, as the driver writes it --------------------------------------

FAKE_WEBHOOK_URL = (  # real-looking (discord.py's from_url checks the form), never a real webhook
    "https://discord.com/api/webhooks/123456789012345678/"
    "Zq3vN8kLp0Xw_Tg5-Hs2Yd7Rb4Mc9Fj1Ua6Ke3Wn0Qx8Lv5Ps2Dy7Bh4Gt9Cr1Jm6Ez0"
)


class HandMadeRun:
    """A run directory written step by step: manifest, rows, status, heartbeat, results."""

    def __init__(self, runs_dir, run_id: str = "flow-a-20261130-080000", *, total: int = 25,
                 gates: dict | None = None, state: str = "running"):
        from pathlib import Path

        self.dir = Path(runs_dir) / run_id
        self.dir.mkdir(parents=True, exist_ok=True)
        self.run_id, self.total = run_id, total
        self.done = 0
        self._write("manifest.json", {
            "run_id": run_id, "prereg": {"id": "flow-official-100", "sha256": "3f" * 32}, "arm": "A",
            "policy": "molmoact2", "decode": "flow", "convmap": "official",
            "seeds": list(range(total)), "episode_seconds": 30.0, "workers": 2,
            "gates": gates if gates is not None else {"gpu_hours": 1.5, "pace_limit_hours": 2.5, "pace_after_episodes": 10},
            "started_at": "2026-11-30T08:00:00Z",
        })
        self.status(state)  # running: the driver has loaded the policy (the launch post waits for it)

    def episodes(self, n: int, state: str = "running") -> "HandMadeRun":
        """Append rows up to `n` episodes done and say so in status.json (heartbeat touched)."""
        from prereg.rundir.rows import complete_row

        with open(self.dir / "rows.jsonl", "a") as f:
            for seed in range(self.done, n):
                knock = seed % 4 == 1
                f.write(json.dumps(complete_row({
                    "run_id": self.run_id, "arm": "A", "seed": seed, "worker": seed % 2,
                    "success": seed % 5 == 0, "progress_cm": 3.0 if seed % 2 == 0 else 0.2,
                    "progress_final_cm": -2.5 if knock else 1.0, "knock_away": knock, "engaged": seed % 2 == 0,
                    "reset_strikes": 0, "predicts": 30, "zero_fallbacks": 1 if seed % 7 == 3 else 0,
                    "wall_s": 30.0, "status": "ok", "error": None,
                })) + "\n")
        self.done = n
        self.status(state)
        (self.dir / "heartbeat").touch()
        return self

    def status(self, state: str, reason: str | None = None, stop=None) -> "HandMadeRun":
        """status.json as the driver writes it; `stop` is the structured rd.StopReason, if any."""
        self._write("status.json", {
            "schema": 1, "stop": stop.as_dict() if stop is not None else None,
            "state": state, "done": self.done, "total": self.total, "elapsed_s": 15.0 * self.done,
            "projected_wall_s": 15.0 * self.total if self.done else None,
            "gpu_hours": round(0.004 * self.done, 3), "gpu_hours_source": "allocated", "reason": reason,
            "updated_at": "2026-11-30T08:10:00Z",
        })
        return self

    def results(self, text: str | None = None, chart: bytes = b"\x89PNG\r\n\x1a\n fake chart") -> "HandMadeRun":
        (self.dir / "results.md").write_text(text or (
            "## Results (2026-11-30)\n\n| read | value |\n| --- | --- |\n"
            "| successes | 5/25 (CI95 0.09-0.39) |\n| knock-aways | 6 |\n\nDecision: continue.\n"))
        (self.dir / "chart.png").write_bytes(chart)
        return self

    def _write(self, name: str, obj: dict) -> None:
        from prereg.rundir.files import write_json_atomic

        write_json_atomic(self.dir / name, obj)
