"""A loopback Hugging Face hub: enough of the API for `huggingface_hub.snapshot_download`.

Serves one repository's files (a directory) at one commit on 127.0.0.1, from a threaded
`http.server`: the revision endpoint (`/api/models/{repo}/revision/{rev}`), the tree listing
(`/api/models/{repo}/tree/{commit}`), and `HEAD`/`GET /{repo}/resolve/{rev}/{path}` with the
headers the client reads (X-Repo-Commit, ETag, Content-Length). Errors carry the hub's
X-Error-Code. `cut_after` makes every file download stop after that many bytes (the connection
closes mid-file); `requests` records what was asked, so a test can prove a cache hit made no
file transfer.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class FakeHub:
    def __init__(self, repo_id: str, root: Path, *, commit: str, token: str | None = None):
        self.repo_id = repo_id
        self.commit = commit
        self.token = token  # when set, requests without "Bearer <token>" get 401
        self.files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        self.cut_after: int | None = None
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def file_gets(self) -> int:
        with self._lock:
            return sum(1 for method, path in self.requests if method == "GET" and "/resolve/" in path)

    # ------------------------------------------------------------------ HTTP

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet test output
                pass

            def do_GET(self):
                hub._serve(self, head=False)

            def do_HEAD(self):
                hub._serve(self, head=True)

        return Handler

    def _serve(self, h: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        with self._lock:
            self.requests.append(("HEAD" if head else "GET", path))
        if self.token is not None and h.headers.get("authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", "Invalid credentials", head)
        api = f"/api/models/{self.repo_id}/"
        resolve = f"/{self.repo_id}/resolve/"
        if path.startswith(api + "revision/"):
            if not self._known(path[len(api + "revision/") :]):
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
            siblings = [{"rfilename": name} for name in self.files]
            return self._json(h, {"id": self.repo_id, "modelId": self.repo_id, "sha": self.commit, "siblings": siblings}, head)
        if path.startswith(api + "tree/"):
            rev = path[len(api + "tree/") :]
            if not self._known(rev):
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
            tree = [
                {"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                for name, data in self.files.items()
            ]
            return self._json(h, tree, head)
        if path.startswith(resolve):
            rev, _, name = path[len(resolve) :].partition("/")
            if not self._known(rev):
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
            if name not in self.files:
                return self._error(h, 404, "EntryNotFound", "Entry not found", head)
            return self._file(h, self.files[name], head)
        return self._error(h, 404, "RepoNotFound", "Repository not found", head)

    def _known(self, rev: str) -> bool:
        return rev in ("main", self.commit)

    def _json(self, h, payload, head: bool) -> None:
        body = json.dumps(payload).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _file(self, h, data: bytes, head: bool) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(len(data)))
        h.send_header("X-Repo-Commit", self.commit)
        h.send_header("ETag", f'"{hashlib.sha1(data).hexdigest()}"')
        h.send_header("Accept-Ranges", "none")
        h.end_headers()
        if head:
            return
        if self.cut_after is not None and len(data) > self.cut_after:
            h.wfile.write(data[: self.cut_after])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)  # the transfer dies mid-file
            return
        h.wfile.write(data)

    def _error(self, h, status: int, code: str, message: str, head: bool) -> None:
        body = json.dumps({"error": message}).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)
