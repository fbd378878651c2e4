"""`fontaine-prereg publish`: a registration's reported results shared on a Hugging Face dataset
repo (`--repo`), its pages on a static Hugging Face Space (`--space`: the lab's reports Space), each in
one commit, and the commit and its links recorded in each run's results files.

What goes up, under PATH_IN_REPO (default: the pre-registration's id):

    <document>.md                          the pre-registration, with its appended results sections
    <id>.results.md, <id>.paired.*.png     the registration's results file and paired charts (beside the runs)
    <run id>/results.md, results.json      the run's report (as the report wrote them)
    <run id>/chart.png, rows.jsonl, rows.json, manifest.json, status.json
    <run id>/videos/rollout_seed006.mp4    the videos the plan names (below), those that were filmed

The videos: `named` (the default) shares the filmed episodes of every success, of the worst
knock-away, of the seeds the protocol's `video_draw: seeds:...` names and of `--video-seeds`; `all`
every filmed episode; `none` none. Which episodes were filmed is the plan's `video_draw`
(prereg/core/video_draw.py): a named seed that was not filmed is said, never an error.

The Space (`plan_space`, prereg/outputs/publish_space.py) gets the report's pages
(prereg/outputs/page.py: the registration's page and each run's) and every file they use, found by
following their relative links (videos, rows, results files), laid out as beside the runs so the links
hold; at its root an index.html of every registration published there and, if it has none, a README.md
that makes it a static Space. A page that links outside the registration's folder is refused (the Space
could not hold what it links).

Only reported runs are published (results.json present, written after the last row), of a registration
that verifies, and never a run that is still going. One `create_commit` (`publish`,
prereg/outputs/publish_hub.py): the hub applies all of it or none of it, so an offline, refused or
failed publish leaves nothing half published, and records nothing locally. Only the files that differ
from the repo's are sent (by git blob id, or sha256 for a large file); when none differs nothing is sent
and the records stay as they were. Published text holds no local absolute path: in every text file the
folders of this machine (the runs' folder, the document's, the working directory, the home directory)
become relative paths (`~/` for the home). The token is huggingface_hub's own (HF_TOKEN, or the one `hf
auth login` saved): it is never written, printed or uploaded (a file that contains it is refused before
anything is sent). huggingface_hub is imported inside the functions that talk to the hub, so `prereg`
stays importable without it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from prereg import rundir as rd
from prereg.core.errors import RunFailed, UsageError
from prereg.core.safe_read import JSON_MAX_BYTES, ROWS_MAX_BYTES, Unreadable, read_regular, why_not_a_folder
from prereg.rundir.files import load_json_object, write_json_atomic, write_text_atomic
from prereg.rundir.rows import read_rows, row_video, rows_by_seed, rows_of_variant
from prereg.rundir.runstate import snapshot_state

REPO_TYPE = "dataset"
SPACE = "space"
VIDEO_CHOICES = ("named", "all", "none")
# a run's files that go up (those present), in this order; the first two carry the local record of a publication
REPORT_FILES = (rd.RESULTS, rd.RESULTS_JSON)
RUN_FILES = (*REPORT_FILES, rd.CHART, rd.ROWS, rd.ROWS_SUMMARY, rd.MANIFEST, rd.STATUS)
PUBLISHED_KEY = "published"  # results.json: the publication record (the dataset)
PUBLISHED_LINE = "- **Published**: "  # results.md: its one line, last in the file
SPACE_KEY = "published_space"  # results.json: the reports Space's record (the page's URL)
PAGE_LINE = "- **Page**: "  # results.md: its line
TEXT_SUFFIXES = (".md", ".json", ".jsonl", ".html", ".txt", ".log", ".yaml", ".yml")  # local paths made relative
_REPO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
_BAD_NAME = re.compile(r"[^A-Za-z0-9._-]")
UPLOAD_MAX_BYTES = ROWS_MAX_BYTES  # the largest file that goes up (a rows.jsonl at its bound)


class PublishFailed(RunFailed):
    """The hub could not be reached or refused the upload: nothing was published or recorded (exit 1)."""


@dataclass(frozen=True)
class Item:
    """One file of the commit: where it goes in the repo, where it comes from, what it is."""

    path_in_repo: str
    local: Path
    what: str
    size: int
    data: bytes | None = field(default=None, repr=False)  # the bytes to send when not the file's own (a report file)

    def content(self) -> bytes:
        """The bytes to send: read bounded and never blocking (a FIFO swapped in is refused, not waited on)."""
        if self.data is not None:
            return self.data
        try:
            return read_regular(self.local, UPLOAD_MAX_BYTES)
        except Unreadable as exc:
            raise UsageError(f"{self.local}: cannot be read ({exc.why}); nothing published") from None


@dataclass
class RunPlan:
    arms: list[str]  # one arm, or the two of a comparison run (one directory, rows interleaved by seed)
    run_dir: Path
    folder: str  # the run's folder in the repo
    videos: dict[str, str] = field(default_factory=dict)  # "6" (a comparison run: "arm:6") -> path in the repo

    @property
    def arm(self) -> str:
        return " and ".join(self.arms)


@dataclass
class PublishPlan:
    prereg_path: Path
    prereg_id: str
    repo_id: str
    revision: str | None
    path_in_repo: str
    items: list[Item]
    runs: list[RunPlan]
    notes: list[str] = field(default_factory=list)
    repo_type: str = REPO_TYPE  # dataset, or space (the pages)
    registration_page: str | None = None  # a Space: the registration's page, its path in the repo
    title: str = ""  # the registration's title (a Space's index)

    @property
    def total_bytes(self) -> int:
        return sum(i.size for i in self.items)

    def lines(self, endpoint: str) -> list[str]:
        """What would go up: one line per file with its size, then the total and the notes."""
        width = len(_size(self.total_bytes))
        out = [f"{_repo_url(endpoint, self.repo_id, self.repo_type)} @ {self.revision or 'main'}: {len(self.items)} files "
               f"under {self.path_in_repo}/, one commit (those the repo holds already are not sent)"]
        out += [f"  {_size(i.size):>{width}}  {i.path_in_repo}  ({i.what})" for i in self.items]
        out.append(f"  {_size(self.total_bytes):>{width}}  in all")
        if self.repo_type == SPACE:
            out.append("  and at the Space's root: index.html (every registration on it), README.md if it has none")
        out += [f"note: {n}" for n in self.notes]
        return out


@dataclass(frozen=True)
class Published:
    repo_id: str
    revision: str
    commit: str
    commit_url: str
    endpoint: str
    at: str
    repo_type: str = REPO_TYPE
    sent: int = 0  # files sent in the commit; 0: the repo held every one already, no commit was made
    total: int = 0  # files the plan had

    def tree_url(self, path: str) -> str:
        return f"{_repo_url(self.endpoint, self.repo_id, self.repo_type)}/tree/{self.commit}/{quote(path, safe='/')}"

    def file_url(self, path: str) -> str:
        """The file's bytes at this commit (what `curl -L` fetches)."""
        return f"{_repo_url(self.endpoint, self.repo_id, self.repo_type)}/resolve/{self.commit}/{quote(path, safe='/')}"

    def page_url(self, path: str) -> str:
        """A Space's page as a browser shows it: on the public hub the Space's static host (its newest commit),
        elsewhere the file at this commit."""
        if self.endpoint.rstrip("/") == PUBLIC_HUB:
            return f"https://{static_host(self.repo_id)}/{quote(path, safe='/')}"
        return self.file_url(path)


# ---------------------------------------------------------------- what goes up


def plan_publish(prereg_path: str | Path, runs: dict[str, Path] | None, *, repo_id: str,
                 runs_dir: str | Path = "runs", path_in_repo: str | None = None, revision: str | None = None,
                 videos: str = "named", video_seeds: tuple[int, ...] = ()) -> PublishPlan:
    """The files of these runs' reports (or of the newest reported run of each arm in `runs_dir`),
    checked and listed; nothing is sent. Bad input is a UsageError naming what and what to do."""
    from prereg.outputs.report import registration_files, runs_folder

    _check_repo_id(repo_id, "--repo", "dataset")
    if videos not in VIDEO_CHOICES:
        raise UsageError(f"--videos {videos!r}: one of {', '.join(VIDEO_CHOICES)}")
    doc, runs = _registration(prereg_path, runs, runs_dir)
    prefix = _prefix(path_in_repo if path_in_repo is not None else doc.prereg_id or doc.path.stem)
    notes: list[str] = []
    roots = local_roots(runs_folder(list(runs.values())), doc.path.parent)
    items = [_item(f"{prefix}/{doc.path.name}", doc.path, "the pre-registration", roots)]
    for f in registration_files(doc, runs):
        items.append(_item(f"{prefix}/{f.name}", f, "the registration's results" if f.suffix == ".md" else "paired chart",
                           roots))
    plans = _run_plans(runs, prefix)
    for plan in plans:
        items += _run_items(doc, plan, videos, video_seeds, notes, roots)
    return PublishPlan(doc.path, doc.prereg_id, repo_id, revision, prefix, items, plans, notes, title=doc.title)


def _check_repo_id(repo_id: str, flag: str, kind: str) -> None:
    if not _REPO_ID.fullmatch(repo_id or ""):
        raise UsageError(f"{flag} {repo_id!r}: expected OWNER/NAME, a Hugging Face {kind} repo, e.g. "
                         f"{flag} my-lab/fontaine-reports")


def _registration(prereg_path, runs, runs_dir):
    """The document (valid and intact) and the runs to publish: as given, or the newest reported run of each arm."""
    from prereg.document.read import load_valid
    from prereg.document.seal import require_intact

    doc = load_valid(prereg_path)
    require_intact(doc.layout, str(doc.path), not_frozen="and only a frozen registration's results are published",
                   modified="Results of a modified registration are not published: revert the change (e.g. `git diff`)")
    runs = {arm: Path(d) for arm, d in runs.items()} if runs else _discover(doc, Path(runs_dir))
    return doc, runs


def _run_plans(runs: dict[str, Path], prefix: str) -> list[RunPlan]:
    """One plan per run directory (a comparison run's two arms share one), each in its own folder of the repo."""
    by_dir: dict[Path, list[str]] = {}
    for arm, run_dir in runs.items():
        by_dir.setdefault(run_dir.resolve(), []).append(arm)
    plans: list[RunPlan] = []
    for arms in by_dir.values():
        run_dir = runs[arms[0]]
        plan = RunPlan(arms, run_dir, f"{prefix}/{run_dir.name}")
        if any(r.folder == plan.folder for r in plans):
            raise UsageError(f"--run {arms[0]}={run_dir}: another run has the same folder name {run_dir.name!r}; "
                             "publish them separately (--path-in-repo)")
        plans.append(plan)
    return plans


def _discover(doc, runs_dir: Path) -> dict[str, Path]:
    """The newest reported run of each frozen arm in `runs_dir`, by manifest (as the report pairs runs)."""
    from prereg.rundir.discovery import newest_registered_run

    found = {}
    for a in doc.arms():
        sm = doc.find_arm(a.name)[1]
        if not sm.section.sealed:
            continue
        d = newest_registered_run(runs_dir, a.name, sm.section.seal.sha256)
        if d is not None and (d / rd.RESULTS_JSON).is_file():
            found[a.name] = d
    if not found:
        raise UsageError(f"no reported run of {doc.prereg_id} in {runs_dir}: pass --run ARM=RUN_DIR (or --runs-dir), "
                         f"after `fontaine-prereg report {doc.path} --run ARM=RUN_DIR`")
    return found


def _prefix(text: str) -> str:
    if text.strip().startswith("/"):  # a path on this machine, most likely: in the repo it would lose its '/'
        raise UsageError(f"--path-in-repo {text!r}: a folder in the repo, not an absolute path, e.g. my-eval "
                         "or evals/my-eval")
    parts = [s for s in text.strip().strip("/").split("/") if s]
    if not parts or any(s in (".", "..") or _BAD_NAME.search(s) for s in parts):
        raise UsageError(f"--path-in-repo {text!r}: a folder in the repo, e.g. my-eval or evals/my-eval "
                         "(letters, digits, . _ - and /)")
    return "/".join(parts)


def _check_reported(doc, plan: RunPlan) -> dict:
    """The run's results.json object, once the run is checked publishable: its arms are the document's, it
    has ended, it has been reported against this registration and nothing was written after the report."""
    run_dir, arm = plan.run_dir, plan.arms[0]
    for a in plan.arms:
        if doc.find_arm(a) is None:
            raise UsageError(f"{doc.path}: no arm {a!r} to publish (arms: {', '.join(x.name for x in doc.arms())})")
    why = why_not_a_folder(run_dir)
    if why is not None:  # a FIFO is 'a FIFO', not 'no such run directory'
        raise UsageError(f"{run_dir}: no such run directory (for arm {arm!r})" if why == "does not exist"
                         else f"{run_dir}: {why}; not a run directory (for arm {arm!r})")
    snap = rd.read_snapshot(run_dir)
    state = snapshot_state(snap)  # the console's word: a run whose process is gone has died, not "still running"
    if state.live:
        raise UsageError(f"{run_dir}: still {state.shown}; publish once it has ended and been reported")
    res_json = run_dir / rd.RESULTS_JSON
    if not res_json.is_file() or not (run_dir / rd.RESULTS).is_file():
        raise UsageError(f"{run_dir}: not reported ({rd.RESULTS_JSON} missing); run "
                         f"`fontaine-prereg report {doc.path} --run {arm}={run_dir}` first")
    res = _report_json(res_json)
    reported = {res.get("arm")} | set(res.get("arms") or ())  # a comparison run's report names both arms
    if res.get("prereg_id") != doc.prereg_id or not set(plan.arms) <= reported:
        raise UsageError(f"{res_json}: the report of {res.get('prereg_id')!r} arm {res.get('arm')!r}, not of "
                         f"{doc.prereg_id!r} arm {plan.arm!r}; report this run against {doc.path} first")
    rows_path = run_dir / rd.ROWS
    if rows_path.is_file() and rows_path.stat().st_mtime > res_json.stat().st_mtime:
        raise UsageError(f"{run_dir}: {rd.ROWS} changed after the report; run `fontaine-prereg report` again first")
    return res


def _run_items(doc, plan: RunPlan, videos: str, extra_seeds: tuple[int, ...], notes: list[str],
               roots: list[tuple[str, str]]) -> list[Item]:
    res = _check_reported(doc, plan)
    run_dir = plan.run_dir
    out = []
    for name in RUN_FILES:
        f = run_dir / name
        if not f.is_file():
            continue
        out.append(_item(f"{plan.folder}/{name}", f, _WHAT[name], roots, res if name == rd.RESULTS_JSON else None))
    if videos == "none":
        return out
    rows = read_rows(run_dir / rd.ROWS).rows
    manifest, _ = rd.read_manifest(run_dir)
    for a in plan.arms:
        arm_rows = [r for r in rows if r.get("arm") == a] if len(plan.arms) > 1 else rows
        out += _video_items(doc, a, arm_rows, plan, videos, extra_seeds, notes, manifest)
    return out


def _item(path_in_repo: str, local: Path, what: str, roots: list[tuple[str, str]], results: dict | None = None) -> Item:
    """One file as it goes up: a report file as the report wrote it (no publication record), a text file with
    this machine's folders made relative, anything else (a video, a chart) as it is."""
    data = _as_reported(local, results) if local.name in REPORT_FILES else None
    if local.suffix in TEXT_SUFFIXES:
        data = no_local_paths(data if data is not None else _read_text_bytes(local), roots)
    return Item(path_in_repo, local, what, len(data) if data is not None else local.stat().st_size, data)


def _read_text_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc})") from None


def local_roots(*folders: Path) -> list[tuple[str, str]]:
    """(this machine's folder, what it becomes in published text), longest first: the given folders (the
    runs' folder, the document's) and the working directory become relative, the home directory `~`."""
    out: dict[str, str] = {}
    for f in [*folders, Path.cwd()]:
        for form in {str(Path(f)), str(Path(f).resolve())}:
            if form != "/":
                out.setdefault(form, "")
    home = Path.home()
    for form in {str(home), str(home.resolve())}:
        if form != "/":
            out.setdefault(form, "~")
    return sorted(out.items(), key=lambda kv: -len(kv[0]))


def no_local_paths(data: bytes, roots: list[tuple[str, str]]) -> bytes:
    """`data` (text) with every local folder in `roots` replaced where it starts a path: `<root>/x` -> `x` (or
    `~/x`), a bare `<root>` -> `.` (or `~`); `/work/root/x` is left alone for a root `/root`. JSON stays JSON:
    a path is replaced inside its string, never across a quote."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    for root, repl in roots:
        if root not in text:
            continue

        def sub(m, repl=repl):
            return (f"{repl}/" if repl else "") if m.group(0).endswith("/") else (repl or ".")

        text = re.sub(r"(?<![\w.-])" + re.escape(root) + r"(?:/|(?![\w.-]))", sub, text)
    return text.encode("utf-8")


def video_key(arm: str, seed: int, *, comparison: bool) -> str:
    """A published video's key in results.json's `published.videos`: its seed, a comparison run's 'arm:seed'
    (a crossed design's episode on another variant than the counted one: the key, '@', the variant)."""
    return f"{arm}:{seed}" if comparison else str(seed)


def video_words(key: str) -> str:
    """A published video's key in words: 'seed 6', a comparison run's 'steady, seed 2' (not 'seed steady:2')."""
    key, at, variant = key.partition("@")
    on = f" on {variant}" if at else ""
    arm, colon, seed = key.rpartition(":")
    return (f"{arm}, seed {seed}" if colon and arm else f"seed {key}") + on


def _video_items(doc, arm: str, rows: list[dict], plan: RunPlan, videos: str, extra_seeds: tuple[int, ...],
                 notes: list[str], manifest=None) -> list[Item]:
    """The videos of `arm` the plan names (or all of them), those filmed; the named ones not filmed go to `notes`.
    A crossed design (issue 48): the seeds are picked by the counted variant's rows (as results.md reads them),
    and a picked seed's episode on every variant goes up (the page's seed box plays each), keyed 'seed@variant'."""
    from prereg.stats.reads import arm_reads

    sm = doc.find_arm(arm)[1]
    variants = manifest.variants if manifest is not None else ()
    counted = manifest.counted_variant if manifest is not None else None
    by_variant = {v: rows_by_seed(rows_of_variant(rows, v), sm.protocol.seeds) for v in variants}
    by_seed = by_variant[counted] if variants else rows_by_seed(rows, sm.protocol.seeds)
    reads = arm_reads(arm, rows_of_variant(rows, counted), planned_seeds=list(sm.protocol.seeds))
    why: dict[int, list[str]] = {}
    if videos == "all":
        for s in sorted(by_seed):
            why.setdefault(s, []).append("filmed")
    else:
        for s in reads.success_seeds:
            why.setdefault(s, []).append("success")
        if reads.worst_knock_seed is not None:
            why.setdefault(reads.worst_knock_seed, []).append(f"worst knock-away {reads.worst_knock_cm:+.2f} cm")
        draw = sm.protocol.video_draw
        for s in (int(x) for x in draw[6:].split(",")) if draw.startswith("seeds:") else ():
            why.setdefault(s, []).append("named by the plan")
        for s in extra_seeds:
            why.setdefault(s, []).append("--video-seeds")
    out, unfilmed = [], []
    for seed in sorted(why):
        video = row_video(plan.run_dir, by_seed.get(seed))
        if video is None and videos != "all":
            unfilmed.append(seed)
        others = [(v, row_video(plan.run_dir, by.get(seed))) for v, by in by_variant.items() if v != counted]
        for variant, got in [(None, video), *others]:
            if got is None:
                continue
            path = f"{plan.folder}/{got.relative_to(plan.run_dir.resolve()).as_posix()}"
            if path in plan.videos.values():
                continue
            key = video_key(arm, seed, comparison=len(plan.arms) > 1) + (f"@{variant}" if variant else "")
            plan.videos[key] = path
            on = f" on {variant}" if variant else ""
            out.append(Item(path, got, f"video of seed {seed}{on}: {', '.join(why[seed])}", got.stat().st_size))
    if unfilmed:
        notes.append(f"{arm}: no video of seed{'s' if len(unfilmed) > 1 else ''} {', '.join(map(str, unfilmed))} "
                     f"(not filmed under video_draw {sm.protocol.video_draw!r}, or the file is gone)")
    return out


_WHAT = {rd.RESULTS: "the run's results", rd.RESULTS_JSON: "the run's results, for machines", rd.CHART: "per-seed chart",
         rd.ROWS: "one row per episode", rd.ROWS_SUMMARY: "summary + rows", rd.MANIFEST: "what was run",
         rd.STATUS: "how it ended"}


def _report_json(path: Path) -> dict:
    """results.json's object, read bounded (a FIFO or a file past the limit is a problem, not a wait)."""
    obj, why = load_json_object(path)
    if obj is None:
        raise UsageError(f"{path}: cannot be read ({why.removeprefix(path.name + ': ')}); "
                         "run `fontaine-prereg report` again")
    return obj


def _as_reported(path: Path, results: dict | None = None) -> bytes:
    """A report file as the report wrote it: without a publication recorded in it since (the dataset's or the
    Space's), so the commit holds the report and publishing again sends the same bytes. `results`:
    results.json's object when the caller has read it already."""
    if path.name == rd.RESULTS_JSON:
        obj = dict(results if results is not None else _report_json(path))
        obj.pop(PUBLISHED_KEY, None)
        obj.pop(SPACE_KEY, None)
        return _json_text(obj).encode()
    kept = [line for line in _report_text(path).splitlines() if not line.startswith((PUBLISHED_LINE, PAGE_LINE))]
    return ("\n".join(kept).rstrip("\n") + "\n").encode()


def _report_text(path: Path) -> str:
    try:
        return read_regular(path, JSON_MAX_BYTES).decode("utf-8")
    except Unreadable as exc:
        raise UsageError(f"{path}: cannot be read ({exc.why}); run `fontaine-prereg report` again") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read ({exc}); run `fontaine-prereg report` again") from None


def _json_text(obj: dict) -> str:
    return json.dumps(obj, indent=2) + "\n"  # as write_json_atomic writes it


# ---------------------------------------------------------------- recording


def record(plan: PublishPlan, pub: Published) -> list[Path]:
    """Write the publication into each run's results.json and results.md: the dataset's (`published`, its
    `Published:` line) or the Space's (`published_space`, its `Page:` line), replacing an earlier one of the
    same kind and keeping the other kind's."""
    from prereg.outputs.page import PAGE

    written = []
    space = plan.repo_type == SPACE
    key, mark = (SPACE_KEY, PAGE_LINE) if space else (PUBLISHED_KEY, PUBLISHED_LINE)
    for run in plan.runs:
        base = {"repo": pub.repo_id, "repo_type": plan.repo_type, "revision": pub.revision, "commit": pub.commit,
                "commit_url": pub.commit_url}
        if space:
            page = pub.page_url(f"{run.folder}/{PAGE}")
            entry = {**base, "space_url": _repo_url(pub.endpoint, pub.repo_id, SPACE), "page_url": page,
                     "registration_url": pub.page_url(plan.registration_page), "published_at": pub.at}
            line = f"{mark}{page} (Space {pub.repo_id}, commit `{pub.commit[:12]}`, {pub.at})"
        else:
            entry = {**base, "folder_url": pub.tree_url(run.folder), "published_at": pub.at,
                     "files": {name: pub.file_url(f"{run.folder}/{name}") for name in RUN_FILES
                               if (run.run_dir / name).is_file()},
                     "videos": {label: pub.file_url(path) for label, path in run.videos.items()}}
            vids = f", {len(run.videos)} video{'s' if len(run.videos) != 1 else ''}" if run.videos else ""
            line = f"{mark}{entry['folder_url']} (commit `{pub.commit[:12]}` of {pub.repo_id}, {pub.at}{vids})"
        res_path = run.run_dir / rd.RESULTS_JSON
        obj = _report_json(res_path)
        obj.pop(key, None)
        obj[key] = entry
        md_path = run.run_dir / rd.RESULTS
        md = _report_text(md_path)
        kept = [x for x in md.splitlines() if not x.startswith(mark)]
        while kept and not kept[-1].strip():
            kept.pop()
        records = [x for x in kept if x.startswith((PUBLISHED_LINE, PAGE_LINE))]
        body = [x for x in kept if not x.startswith((PUBLISHED_LINE, PAGE_LINE))]
        while body and not body[-1].strip():
            body.pop()
        write_json_atomic(res_path, obj)
        write_text_atomic(md_path, "\n".join(body) + "\n\n" + "\n".join([*records, line]) + "\n")
        written += [res_path, md_path]
    return written


def _repo_url(endpoint: str, repo_id: str, repo_type: str = REPO_TYPE) -> str:
    return f"{endpoint.rstrip('/')}/{'spaces' if repo_type == SPACE else 'datasets'}/{repo_id}"


def _commit_url(endpoint: str, repo_id: str, repo_type: str, commit: str) -> str:
    return f"{_repo_url(endpoint, repo_id, repo_type)}/commit/{commit}"


PUBLIC_HUB = "https://huggingface.co"


def static_host(repo_id: str) -> str:
    """Where the public hub serves a static Space's files: OWNER/NAME -> owner-name.static.hf.space (lower
    case, every run of other characters one hyphen)."""
    return re.sub(r"[^a-z0-9]+", "-", repo_id.lower()).strip("-") + ".static.hf.space"


def _size(n: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("kB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
