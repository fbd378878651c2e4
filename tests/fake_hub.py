"""A loopback Hugging Face hub: enough of the API for `huggingface_hub.snapshot_download` and for
`HfApi.create_repo` / `create_branch` / `create_commit` to a dataset repo.

Downloads (engine tests): serves one model repository's files (a directory) at one commit on
127.0.0.1, from a threaded `http.server`: the revision endpoint (`/api/models/{repo}/revision/{rev}`),
the tree listing (`/api/models/{repo}/tree/{commit}`), and `HEAD`/`GET /{repo}/resolve/{rev}/{path}`
with the headers the client reads (X-Repo-Commit, ETag, Content-Length). Errors carry the hub's
X-Error-Code. `cut_after` makes every file download stop after that many bytes (the connection
closes mid-file); `requests` records what was asked, so a test can prove a cache hit made no
file transfer.

Uploads (prereg publish tests): dataset repos in memory (`datasets`: repo id -> DatasetRepo, its
branches and its commits, each commit the whole tree it made). `POST /api/repos/create` (409 when
the repo exists), `GET /api/datasets/{repo}[/revision/{rev}]`, `POST /api/datasets/{repo}/branch/{b}`,
`POST /api/datasets/{repo}/preupload/{rev}` (every file "regular": small files go inline in the
commit, as huggingface_hub sends them below the hub's LFS threshold), `POST
/api/datasets/{repo}/commit/{rev}` (the ndjson header + files, applied all at once), and `GET
/datasets/{repo}/resolve/{rev}/{path}` for the files committed. `refuse_create` answers the create
with 403 and `refuse_commit` the commit with that status; `token` refuses (401) any request
without it; `bodies` keeps every request body, so a test can look for what must never be sent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


@dataclass
class Commit:
    oid: str
    branch: str
    summary: str
    description: str
    added: dict[str, bytes]  # what this commit sent
    tree: dict[str, bytes]  # the whole tree after it


@dataclass
class DatasetRepo:
    repo_id: str
    private: bool
    commits: list[Commit] = field(default_factory=list)
    branches: dict[str, str | None] = field(default_factory=lambda: {"main": None})  # branch -> head oid

    def tree(self, rev: str) -> dict[str, bytes] | None:
        oid = self.branches.get(rev, rev)
        if oid is None:
            return {} if rev in self.branches else None
        return next((c.tree for c in self.commits if c.oid == oid), None)


class FakeHub:
    def __init__(self, repo_id: str = "", root: Path | None = None, *, commit: str = "0" * 40, token: str | None = None):
        self.repo_id = repo_id
        self.commit = commit
        self.token = token  # when set, requests without "Bearer <token>" get 401
        self.files = ({p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
                      if root is not None else {})
        self.cut_after: int | None = None
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self.datasets: dict[str, DatasetRepo] = {}
        self.refuse_create = False  # the create endpoint answers 403 (a token that may not create repos)
        self.refuse_commit: int | None = None  # the commit endpoint answers with this status
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

            def do_POST(self):
                hub._post(self)

        return Handler

    def _serve(self, h: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        with self._lock:
            self.requests.append(("HEAD" if head else "GET", path))
        if self.token is not None and h.headers.get("authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", "Invalid credentials", head)
        if path.startswith(("/api/datasets/", "/datasets/")):
            return self._dataset_get(h, path, head)
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

    def _error(self, h, status: int, code: str, message: str, head: bool, **extra) -> None:
        body = json.dumps({"error": message, **extra}).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        if code:
            h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", message)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    # ------------------------------------------------------------------ dataset repos (uploads)

    def commits(self, repo_id: str) -> list[Commit]:
        with self._lock:
            repo = self.datasets.get(repo_id)
            return list(repo.commits) if repo else []

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(h.path).path)
        body = h.rfile.read(int(h.headers.get("content-length") or 0))
        with self._lock:
            self.requests.append(("POST", path))
            self.bodies.append(body)
        if self.token is not None and h.headers.get("authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "", "Invalid username or password.", False)
        if path == "/api/repos/create":
            req = json.loads(body)
            if req.get("type") != "dataset":
                return self._error(h, 400, "", "this fake creates dataset repos only", False)
            if self.refuse_create:
                return self._error(h, 403, "", "You don't have the rights to create a dataset under this namespace", False)
            repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
            with self._lock:
                if repo_id in self.datasets:
                    return self._error(h, 409, "", "You already created this dataset repo", False,
                                       url=f"{self.endpoint}/datasets/{repo_id}")
                self.datasets[repo_id] = DatasetRepo(repo_id, req.get("visibility") == "private")
            return self._json(h, {"url": f"{self.endpoint}/datasets/{repo_id}", "name": repo_id}, False)
        repo, action, rev = self._dataset_route(path[len("/api/datasets/"):]) if path.startswith("/api/datasets/") else (None, "", "")
        if repo is None:
            return self._error(h, 404, "RepoNotFound", "Repository not found", False)
        if action == "branch":
            with self._lock:
                if rev in repo.branches:
                    return self._error(h, 409, "", f"Reference already exists: refs/heads/{rev}", False)
                repo.branches[rev] = repo.branches["main"]
            return self._json(h, {}, False)
        if rev not in repo.branches:
            return self._error(h, 404, "RevisionNotFound", "Invalid rev id", False)
        if action == "preupload":
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                     for f in json.loads(body)["files"]]
            return self._json(h, {"files": files, "commitOid": repo.branches[rev]}, False)
        if action == "commit":
            if self.refuse_commit is not None:
                return self._error(h, self.refuse_commit, "", "commit refused by the fake hub", False)
            lines = [json.loads(x) for x in body.splitlines() if x.strip()]
            header = next(x["value"] for x in lines if x["key"] == "header")
            added = {}
            for x in lines:
                if x["key"] == "file":
                    assert x["value"]["encoding"] == "base64"
                    added[x["value"]["path"]] = base64.b64decode(x["value"]["content"])
                elif x["key"] != "header":
                    return self._error(h, 400, "", f"this fake takes regular files only, not {x['key']}", False)
            with self._lock:
                parent = repo.branches[rev]
                tree = {**(repo.tree(rev) or {}), **added}
                oid = hashlib.sha1(json.dumps([parent, header, sorted((k, hashlib.sha1(v).hexdigest())
                                                                      for k, v in added.items())]).encode()).hexdigest()
                repo.commits.append(Commit(oid, rev, header["summary"], header.get("description", ""), added, tree))
                repo.branches[rev] = oid
            return self._json(h, {"commitUrl": f"{self.endpoint}/datasets/{repo.repo_id}/commit/{oid}",
                                  "commitOid": oid, "pullRequestUrl": None}, False)
        return self._error(h, 404, "", "Not found", False)

    def _dataset_route(self, rest: str) -> tuple[DatasetRepo | None, str, str]:
        """'owner/name/ACTION/rev...' -> (repo, action, rev); (repo, '', '') for 'owner/name'."""
        parts = rest.split("/")
        with self._lock:
            repo = self.datasets.get("/".join(parts[:2]))
        return repo, (parts[2] if len(parts) > 2 else ""), "/".join(parts[3:])

    def _dataset_get(self, h, path: str, head: bool) -> None:
        if path.startswith("/api/datasets/"):
            repo, action, rev = self._dataset_route(path[len("/api/datasets/"):])
            if repo is None:
                return self._error(h, 404, "RepoNotFound", "Repository not found", head)
            rev = rev if action == "revision" else "main"
            if action not in ("", "revision") or (repo.tree(rev) is None):
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
            sha = repo.branches.get(rev, rev)
            siblings = [{"rfilename": name} for name in repo.tree(rev) or {}]
            return self._json(h, {"id": repo.repo_id, "sha": sha, "private": repo.private, "siblings": siblings}, head)
        parts = path[len("/datasets/"):].split("/")
        with self._lock:
            repo = self.datasets.get("/".join(parts[:2]))
        if repo is None or len(parts) < 5 or parts[2] != "resolve":
            return self._error(h, 404, "RepoNotFound", "Repository not found", head)
        tree = repo.tree(parts[3])
        if tree is None:
            return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
        name = "/".join(parts[4:])
        if name not in tree:
            return self._error(h, 404, "EntryNotFound", "Entry not found", head)
        return self._file(h, tree[name], head)
