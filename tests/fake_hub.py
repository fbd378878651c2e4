"""A loopback Hugging Face hub: enough of the API for `huggingface_hub.snapshot_download` and for
`HfApi.create_repo` / `create_branch` / `create_commit` to a dataset repo.

Downloads (engine tests): serves one model repository's files (a directory) at one commit on
127.0.0.1, from a threaded `http.server`: the revision endpoint (`/api/models/{repo}/revision/{rev}`),
the tree listing (`/api/models/{repo}/tree/{commit}`), and `HEAD`/`GET /{repo}/resolve/{rev}/{path}`
with the headers the client reads (X-Repo-Commit, ETag, Content-Length). Errors carry the hub's
X-Error-Code. `cut_after` makes every file download stop after that many bytes (the connection
closes mid-file); `requests` records what was asked, so a test can prove a cache hit made no
file transfer.

Uploads (prereg publish tests): dataset and Space repos in memory (`repos`: (type, id) -> Repo, its
branches and its commits, each commit the whole tree it made; `datasets` / `spaces` by id). `POST
/api/repos/create` (409 when the repo exists), `GET /api/{type}s/{repo}[/revision/{rev}]`, `GET
/api/{type}s/{repo}/tree/{rev}[/path]` (the tree with each file's git blob oid and, for a large file,
its LFS sha256), `POST /api/{type}s/{repo}/branch/{b}`, `POST /api/{type}s/{repo}/preupload/{rev}`
(a binary file, one with a NUL byte in its sample, goes "lfs", the rest "regular" and inline in the
commit, as the hub's defaults do), `POST /api/validate-yaml` (a Space's README needs its sdk), `POST
/api/{type}s/{repo}/commit/{rev}` (the ndjson header, files
and lfsFiles, applied all at once; an lfsFile whose bytes never arrived is refused with 400), and `GET
/{type}s/{repo}/resolve/{rev}/{path}` for the files committed.

Large files arrive by one of two roads, as on the real hub. **LFS** (huggingface_hub without hf_xet, or
HF_HUB_DISABLE_XET): the batch endpoint `POST /{type}s/{repo}.git/info/lfs/objects/batch` answers a
basic-transfer upload href on this server, `PUT` there with the bytes (checked against their sha256).
**Xet** (hf_xet installed, the default): `GET /api/{type}s/{repo}/xet-write-token/{rev}` gives a token
and this server's CAS (`/cas`), to which hf_xet posts xorbs (`/v1/xorbs/default/{hash}`) and a shard
(`/v1/shards`, `/v2/shards`); the shard's file entries are read back into bytes from the xorbs (chunk
headers, LZ4 frames or blocks, byte grouping: https://huggingface.co/docs/xet), and a file counts as
uploaded only when its bytes hash to the sha256 the shard names. `xet=False` is a hub without Xet (the
token endpoint answers 404, as a self-hosted or older hub does). `uploads` records which road each
sha256 came by.

`refuse_create` answers the create with 403 and `refuse_commit` the commit with that status; `token`
refuses (401) any request without it; `bodies` keeps every request body, so a test can look for what
must never be sent.
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
class Repo:
    repo_id: str
    private: bool
    repo_type: str = "dataset"  # dataset | space
    sdk: str | None = None  # a Space's
    commits: list[Commit] = field(default_factory=list)
    branches: dict[str, str | None] = field(default_factory=lambda: {"main": None})  # branch -> head oid

    def tree(self, rev: str) -> dict[str, bytes] | None:
        oid = self.branches.get(rev, rev)
        if oid is None:
            return {} if rev in self.branches else None
        return next((c.tree for c in self.commits if c.oid == oid), None)


def git_blob_id(data: bytes) -> str:
    """How the hub names a file kept outside LFS (its ETag, its tree oid): git's blob id of the content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class FakeHub:
    def __init__(self, repo_id: str = "", root: Path | None = None, *, commit: str = "0" * 40, token: str | None = None,
                 xet: bool = True):
        self.repo_id = repo_id
        self.commit = commit
        self.token = token  # when set, requests without "Bearer <token>" get 401
        self.files = ({p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
                      if root is not None else {})
        self.cut_after: int | None = None
        self.requests: list[tuple[str, str]] = []
        self.bodies: list[bytes] = []
        self.repos: dict[tuple[str, str], Repo] = {}  # (repo type, repo id) -> the repo
        self.xet = xet  # False: a hub without Xet storage (the write-token endpoint answers 404)
        self.cas = _Cas()
        self.lfs_objects: dict[str, bytes] = {}  # sha256 -> bytes, put through the LFS basic transfer
        self.uploads: dict[str, str] = {}  # sha256 -> "lfs" | "xet": which road a large file took
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

            def do_PUT(self):
                hub._put(self)

        return Handler

    def _serve(self, h: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        with self._lock:
            self.requests.append(("HEAD" if head else "GET", path))
        if path.startswith("/cas/"):
            return self._cas_get(h, path, head)
        if self.token is not None and h.headers.get("authorization") != f"Bearer {self.token}":
            return self._error(h, 401, "RepoNotFound", "Invalid credentials", head)
        if path.startswith(_API_PREFIXES + _FILE_PREFIXES):
            return self._repo_get(h, path, head)
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
                {"type": "file", "path": name, "size": len(data), "oid": git_blob_id(data)}
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
        h.send_header("ETag", f'"{git_blob_id(data)}"')  # the hub's ETag of a file outside LFS: its git blob id
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

    # ------------------------------------------------------------------ repos (uploads)

    @property
    def datasets(self) -> dict[str, "Repo"]:
        with self._lock:
            return {rid: r for (t, rid), r in self.repos.items() if t == "dataset"}

    @property
    def spaces(self) -> dict[str, "Repo"]:
        with self._lock:
            return {rid: r for (t, rid), r in self.repos.items() if t == "space"}

    def commits(self, repo_id: str, repo_type: str = "dataset") -> list[Commit]:
        with self._lock:
            repo = self.repos.get((repo_type, repo_id))
            return list(repo.commits) if repo else []

    def _authorised(self, h) -> bool:
        return self.token is None or h.headers.get("authorization") == f"Bearer {self.token}"

    def _body(self, h, method: str, path: str) -> bytes:
        body = h.rfile.read(int(h.headers.get("content-length") or 0))
        with self._lock:
            self.requests.append((method, path))
            self.bodies.append(body)
        return body

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(h.path).path)
        body = self._body(h, "POST", path)
        if path.startswith("/cas/"):
            return self._cas_post(h, path, body)
        if not self._authorised(h):
            return self._error(h, 401, "", "Invalid username or password.", False)
        if path == "/api/repos/create":
            return self._create(h, json.loads(body))
        if path == "/api/validate-yaml":  # a README.md's front matter, checked before its commit
            req = json.loads(body)
            head = req.get("content", "").split("---")
            if req.get("repoType") == "space" and (len(head) < 3 or "sdk:" not in head[1]):
                return self._error(h, 400, "", "a Space's README needs a front matter with its sdk", False,
                                   errors=[{"message": "sdk is required"}])
            return self._json(h, {"warnings": []}, False)
        if path.endswith(".git/info/lfs/objects/batch"):
            return self._lfs_batch(h, path, json.loads(body))
        repo, action, rev = self._route(path)
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
            tree = repo.tree(rev) or {}
            files = []
            for f in json.loads(body)["files"]:
                lfs = b"\0" in base64.b64decode(f["sample"])
                have = tree.get(f["path"])
                oid = None if have is None else hashlib.sha256(have).hexdigest() if lfs else git_blob_oid(have)
                files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False,
                              "oid": oid})
            return self._json(h, {"files": files, "commitOid": repo.branches[rev]}, False)
        if action == "commit":
            return self._commit(h, repo, rev, body)
        return self._error(h, 404, "", "Not found", False)

    def _create(self, h, req: dict) -> None:
        kind = req.get("type") or "model"
        if kind not in ("dataset", "space"):
            return self._error(h, 400, "", "this fake creates dataset and Space repos only", False)
        if kind == "space" and req.get("sdk") not in ("static", "gradio", "docker"):
            return self._error(h, 400, "", "a Space needs an sdk", False)
        if self.refuse_create:
            return self._error(h, 403, "", f"You don't have the rights to create a {kind} under this namespace", False)
        repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
        url = f"{self.endpoint}/{_PREFIX[kind]}{repo_id}"
        with self._lock:
            if (kind, repo_id) in self.repos:
                return self._error(h, 409, "", f"You already created this {kind} repo", False, url=url)
            self.repos[(kind, repo_id)] = Repo(repo_id, req.get("visibility") == "private", kind, req.get("sdk"))
        return self._json(h, {"url": url, "name": repo_id}, False)

    def _commit(self, h, repo: "Repo", rev: str, body: bytes) -> None:
        if self.refuse_commit is not None:
            return self._error(h, self.refuse_commit, "", "commit refused by the fake hub", False)
        lines = [json.loads(x) for x in body.splitlines() if x.strip()]
        header = next(x["value"] for x in lines if x["key"] == "header")
        added = {}
        for x in lines:
            v = x["value"]
            if x["key"] == "file":
                assert v["encoding"] == "base64"
                added[v["path"]] = base64.b64decode(v["content"])
            elif x["key"] == "lfsFile":
                data = self.cas.files[v["oid"]] if v["oid"] in self.cas.files else self.lfs_objects.get(v["oid"])
                if data is None:
                    return self._error(h, 400, "", f"{v['path']}: no LFS or Xet object with sha256 {v['oid']} "
                                                   "was uploaded", False)
                added[v["path"]] = data
            elif x["key"] != "header":
                return self._error(h, 400, "", f"this fake takes files and lfsFiles, not {x['key']}", False)
        with self._lock:
            parent = repo.branches[rev]
            tree = {**(repo.tree(rev) or {}), **added}
            oid = hashlib.sha1(json.dumps([parent, header, sorted((k, hashlib.sha1(v).hexdigest())
                                                                  for k, v in added.items())]).encode()).hexdigest()
            repo.commits.append(Commit(oid, rev, header["summary"], header.get("description", ""), added, tree))
            repo.branches[rev] = oid
        return self._json(h, {"commitUrl": f"{self.endpoint}/{_PREFIX[repo.repo_type]}{repo.repo_id}/commit/{oid}",
                              "commitOid": oid, "pullRequestUrl": None}, False)

    def _route(self, path: str) -> tuple["Repo | None", str, str]:
        """'/api/{type}s/owner/name/ACTION/rev...' -> (repo, action, rev); (repo, '', '') for the repo itself."""
        kind = next((k for k, pre in _API.items() if path.startswith(pre)), None)
        if kind is None:
            return None, "", ""
        parts = path[len(_API[kind]):].split("/")
        with self._lock:
            repo = self.repos.get((kind, "/".join(parts[:2])))
        return repo, (parts[2] if len(parts) > 2 else ""), "/".join(parts[3:])

    def _repo_get(self, h, path: str, head: bool) -> None:
        if path.startswith(_API_PREFIXES):
            repo, action, rest = self._route(path)
            if repo is None:
                return self._error(h, 404, "RepoNotFound", "Repository not found", head)
            if action == "xet-write-token":
                return self._xet_token(h, head)
            if action == "tree":
                rev, _, sub = rest.partition("/")
                return self._tree(h, repo, rev, sub, head)
            rev = rest if action == "revision" else "main"
            if action not in ("", "revision") or (repo.tree(rev) is None):
                return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
            sha = repo.branches.get(rev, rev)
            siblings = [{"rfilename": name} for name in repo.tree(rev) or {}]
            return self._json(h, {"id": repo.repo_id, "sha": sha, "private": repo.private, "siblings": siblings,
                                  **({"sdk": repo.sdk} if repo.sdk else {})}, head)
        kind = next(k for k, pre in _FILES.items() if path.startswith(pre))
        parts = path[len(_FILES[kind]):].split("/")
        with self._lock:
            repo = self.repos.get((kind, "/".join(parts[:2])))
        if repo is None or len(parts) < 5 or parts[2] != "resolve":
            return self._error(h, 404, "RepoNotFound", "Repository not found", head)
        tree = repo.tree(parts[3])
        if tree is None:
            return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
        name = "/".join(parts[4:])
        if name not in tree:
            return self._error(h, 404, "EntryNotFound", "Entry not found", head)
        return self._file(h, tree[name], head)

    def _tree(self, h, repo: "Repo", rev: str, sub: str, head: bool) -> None:
        """The files under `sub` at `rev` (recursive): path, size, git blob oid, and the LFS sha256 of a binary file."""
        tree = repo.tree(rev)
        if tree is None:
            return self._error(h, 404, "RevisionNotFound", "Invalid rev id", head)
        out = []
        for name, data in sorted(tree.items()):
            if sub and not name.startswith(sub.rstrip("/") + "/"):
                continue
            entry = {"type": "file", "path": name, "size": len(data), "oid": git_blob_oid(data)}
            if b"\0" in data[:512]:
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            out.append(entry)
        return self._json(h, out, head)

    # ------------------------------------------------------------------ LFS (basic transfer)

    def _lfs_batch(self, h, path: str, req: dict) -> None:
        objects = []
        for o in req.get("objects", []):
            have = o["oid"] in self.lfs_objects
            objects.append({"oid": o["oid"], "size": o["size"], "authenticated": True,
                            **({} if have else {"actions": {"upload": {"href": f"{self.endpoint}/lfs-put/{o['oid']}"}}})})
        return self._json(h, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"}, False)

    def _put(self, h: BaseHTTPRequestHandler) -> None:
        path = unquote(urlsplit(h.path).path)
        body = self._body(h, "PUT", path)
        if not path.startswith("/lfs-put/"):
            return self._error(h, 404, "", "Not found", False)
        oid = path[len("/lfs-put/"):]
        if hashlib.sha256(body).hexdigest() != oid:
            return self._error(h, 400, "", "the bytes do not hash to the object's sha256", False)
        with self._lock:
            self.lfs_objects[oid] = body
            self.uploads[oid] = "lfs"
        return self._json(h, {}, False)

    # ------------------------------------------------------------------ Xet (a CAS at /cas)

    def _xet_token(self, h, head: bool) -> None:
        if not self.xet:
            return self._error(h, 404, "", "Not found", head)
        exp = 4102444800  # 2100-01-01: the test never refreshes
        body = {"accessToken": self.cas.token, "exp": exp, "casUrl": f"{self.endpoint}/cas"}
        raw = json.dumps(body).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("X-Xet-Cas-Url", body["casUrl"])
        h.send_header("X-Xet-Access-Token", body["accessToken"])
        h.send_header("X-Xet-Token-Expiration", str(exp))
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        if not head:
            h.wfile.write(raw)

    def _cas_get(self, h, path: str, head: bool) -> None:
        if h.headers.get("authorization") != f"Bearer {self.cas.token}":
            return self._error(h, 401, "", "no Xet token", head)
        if path.startswith("/cas/v1/chunks/"):
            return self._error(h, 404, "", "not tracked by global deduplication", head)  # no dedupe against others
        return self._error(h, 404, "", "this fake CAS serves no downloads", head)

    def _cas_post(self, h, path: str, body: bytes) -> None:
        if h.headers.get("authorization") != f"Bearer {self.cas.token}":
            return self._error(h, 401, "", "no Xet token", False)
        if path.startswith("/cas/v1/xorbs/default/"):
            with self._lock:
                new = path.rsplit("/", 1)[1] not in self.cas.xorbs
                self.cas.xorbs[path.rsplit("/", 1)[1]] = body
            return self._json(h, {"was_inserted": new}, False)
        if path in ("/cas/v1/shards", "/cas/v2/shards"):
            try:
                files = self.cas.read_shard(body)
            except ValueError as exc:
                return self._error(h, 400, "", f"shard refused: {exc}", False)
            with self._lock:
                self.cas.files.update(files)
                self.uploads.update(dict.fromkeys(files, "xet"))
            if path.endswith("v2/shards"):
                raw = b'{"type":"result","result":1}\n'
                h.send_response(200)
                h.send_header("Content-Type", "application/x-ndjson")
                h.send_header("Content-Length", str(len(raw)))
                h.end_headers()
                h.wfile.write(raw)
                return None
            return self._json(h, {"result": 1}, False)
        return self._error(h, 404, "", "Not found", False)


_PREFIX = {"dataset": "datasets/", "space": "spaces/", "model": ""}
_API = {"dataset": "/api/datasets/", "space": "/api/spaces/"}
_FILES = {"dataset": "/datasets/", "space": "/spaces/"}
_API_PREFIXES = tuple(_API.values())
_FILE_PREFIXES = tuple(_FILES.values())


def git_blob_oid(data: bytes) -> str:
    """git's object id of a blob: sha1 of 'blob <size>\\0' + the bytes (the hub's oid of a regular file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# ---------------------------------------------------------------- Xet storage, read back


def xet_hash_string(raw: bytes) -> str:
    """A 32-byte Xet hash as the API writes it: each 8-byte group little-endian (docs/xet/api.md)."""
    return "".join(raw[i:i + 8][::-1].hex() for i in range(0, 32, 8))


class _Cas:
    """Xorbs as posted, and the files a shard described, read back into bytes (sha256 hex -> bytes)."""

    def __init__(self):
        self.token = "xet_fake_" + hashlib.sha1(str(id(self)).encode()).hexdigest()[:16]
        self.xorbs: dict[str, bytes] = {}
        self.files: dict[str, bytes] = {}

    def read_shard(self, shard: bytes) -> dict[str, bytes]:
        import struct

        if len(shard) < 48 or struct.unpack_from("<Q", shard, 32)[0] != 2:
            raise ValueError("not a version 2 shard")
        at, out = 48, {}
        while True:
            file_hash, flags, n = shard[at:at + 32], *struct.unpack_from("<II", shard, at + 32)
            at += 48
            if file_hash == b"\xff" * 32:
                return out
            parts = []
            for _ in range(n):
                cas_hash = shard[at:at + 32]
                _, size, first, end = struct.unpack_from("<IIII", shard, at + 32)
                at += 48
                key = xet_hash_string(cas_hash)
                if key not in self.xorbs:
                    raise ValueError(f"xorb {key} was never uploaded")
                data = b"".join(xorb_chunks(self.xorbs[key])[first:end])
                if len(data) != size:
                    raise ValueError(f"xorb {key} chunks [{first}, {end}) hold {len(data)} bytes, not {size}")
                parts.append(data)
            if flags & (1 << 31):
                at += 48 * n  # verification entries
            if not flags & (1 << 30):
                raise ValueError("a file without its sha256 (metadata extension): the hub needs it for git LFS")
            sha = xet_hash_string(shard[at:at + 32])  # stored as Xet stores a hash (hf_xet 1.8)
            at += 48
            data = b"".join(parts)
            if hashlib.sha256(data).hexdigest() != sha:
                raise ValueError(f"the bytes read back do not hash to the sha256 the shard names ({sha})")
            out[sha] = data


def xorb_chunks(xorb: bytes) -> list[bytes]:
    """Every chunk of a serialized xorb, decompressed (8-byte header each; a footer, if any, ends the list)."""
    out, at = [], 0
    while at + 8 <= len(xorb) and xorb[at] == 0:
        csize = int.from_bytes(xorb[at + 1:at + 4], "little")
        kind = xorb[at + 4]
        usize = int.from_bytes(xorb[at + 5:at + 8], "little")
        data = xorb[at + 8:at + 8 + csize]
        at += 8 + csize
        if kind == 0:
            raw = data
        elif kind in (1, 2):
            raw = lz4_decompress(data, usize)
            if kind == 2:
                raw = _ungroup4(raw)
        else:
            raise ValueError(f"unknown chunk compression {kind}")
        if len(raw) != usize:
            raise ValueError(f"a chunk decompressed to {len(raw)} bytes, not {usize}")
        out.append(raw)
    return out


def _ungroup4(data: bytes) -> bytes:
    """Undo byte grouping: 4 groups (the first len % 4 one byte longer) interleaved back."""
    n = len(data)
    sizes = [n // 4 + (1 if i < n % 4 else 0) for i in range(4)]
    groups, at = [], 0
    for s in sizes:
        groups.append(data[at:at + s])
        at += s
    out = bytearray(n)
    for i in range(4):
        out[i::4] = groups[i]
    return bytes(out)


def lz4_decompress(data: bytes, size_hint: int) -> bytes:
    """An LZ4 frame (magic 0x184D2204) or a bare LZ4 block, decompressed."""
    if data[:4] != b"\x04\x22\x4d\x18":
        return _lz4_block(data)
    flg, at = data[4], 7  # magic, FLG, BD, then (optional content size) and the header checksum
    if flg & 0x08:
        at += 8
    if flg & 0x01:
        at += 4
    out = bytearray()
    while True:
        size = int.from_bytes(data[at:at + 4], "little")
        at += 4
        if size == 0:
            break
        raw, size = size & 0x80000000, size & 0x7FFFFFFF
        block = data[at:at + size]
        at += size + (4 if flg & 0x10 else 0)
        out += block if raw else _lz4_block(block, bytes(out[-65536:]))
    return bytes(out)


def _lz4_block(src: bytes, prefix: bytes = b"") -> bytes:
    out = bytearray(prefix)
    start, i = len(prefix), 0
    while i < len(src):
        token = src[i]
        n, i = _lz4_length(src, i + 1, token >> 4)
        out += src[i:i + n]
        i += n
        if i >= len(src):
            break
        offset = src[i] | (src[i + 1] << 8)
        m, i = _lz4_length(src, i + 2, token & 15)
        m += 4
        pos = len(out) - offset
        for k in range(m):  # overlapping copies repeat the bytes just written
            out.append(out[pos + k])
    return bytes(out[start:])


def _lz4_length(src: bytes, i: int, n: int) -> tuple[int, int]:
    """A literal or match length: its 4 bits, and when they are 15, the 255-bytes that follow (and the next)."""
    if n == 15:
        while True:
            b = src[i]
            i += 1
            n += b
            if b != 255:
                break
    return n, i
