"""The reports Space's side of `fontaine-prereg publish --space`: what goes up to a static Hugging Face Space
(`plan_space`: the report's pages and every file they link, laid out as beside the runs) and the Space's root
that each publish rewrites (`space_front`: index.html of every registration on it, and a README.md that makes it a
static Space when it has none). prereg/outputs/publish.py holds the plan's model and the dataset's files;
prereg/outputs/publish_hub.py sends either."""

from __future__ import annotations

from pathlib import Path

from prereg import rundir as rd
from prereg.core.errors import UsageError
from prereg.outputs.publish import (
    _WHAT,
    SPACE,
    PublishPlan,
    _check_repo_id,
    _check_reported,
    _item,
    _prefix,
    _registration,
    _run_plans,
    local_roots,
)
from prereg.rundir.files import utc_now


def plan_space(prereg_path: str | Path, runs: dict[str, Path] | None, *, repo_id: str, runs_dir: str | Path = "runs",
               path_in_repo: str | None = None, revision: str | None = None) -> PublishPlan:
    """The report's pages for a static Space: the registration's page, each run's page, and every file they use
    (by their relative links), under PATH_IN_REPO laid out as beside the runs; nothing is sent. Refused (bad
    input): a run not reported, a report from before the pages, a page that links outside the runs' folder."""
    from prereg.outputs.page import PAGE, registration_page_name
    from prereg.outputs.page_html import linked_files
    from prereg.outputs.report import runs_folder
    from prereg.outputs.report_read import registration_results_name

    _check_repo_id(repo_id, "--space", "static Space")
    doc, runs = _registration(prereg_path, runs, runs_dir)
    prefix = _prefix(path_in_repo if path_in_repo is not None else doc.prereg_id or doc.path.stem)
    folder = runs_folder(list(runs.values())).resolve()
    reg_page = folder / registration_page_name(registration_results_name(doc))
    plans = _run_plans(runs, prefix)
    pages = [reg_page]
    for plan in plans:
        _check_reported(doc, plan)
        pages.append(plan.run_dir.resolve() / PAGE)
    for page in pages:
        if not page.is_file():
            raise UsageError(f"{page}: no page (a report from before results.html); run `fontaine-prereg report "
                             f"{doc.path}` with these runs again, then publish")
    files: set[Path] = set()
    for page in pages:
        found, problems = linked_files(page, folder)
        if problems:
            raise UsageError(f"{page}: {problems[0]}: a Space holds the pages and what they link inside {folder}; "
                             "report runs that share one folder (or publish the dataset only)")
        files.update(found)
    roots = local_roots(folder, doc.path.parent)
    reports = {plan.run_dir.resolve(): plan for plan in plans}
    items = []
    for f in sorted(files):
        rel = f.relative_to(folder).as_posix()
        plan = reports.get(f.parent)
        results = _check_reported(doc, plan) if plan is not None and f.name == rd.RESULTS_JSON else None
        items.append(_item(f"{prefix}/{rel}", f, _page_what(f, reg_page), roots, results))
    for plan in plans:
        plan.folder = f"{prefix}/{plan.run_dir.resolve().relative_to(folder).as_posix()}"
    return PublishPlan(doc.path, doc.prereg_id, repo_id, revision, prefix, items, plans, [], repo_type=SPACE,
                       registration_page=f"{prefix}/{reg_page.name}", title=doc.title)


def _page_what(f: Path, reg_page: Path) -> str:
    if f == reg_page:
        return "the registration's page"
    if f.suffix == ".html":
        return "a run's page"
    if f.suffix == ".mp4":
        return "a seed's video"
    return _WHAT.get(f.name, "a file the pages link")


def space_front(plan: PublishPlan, held: dict, contents: dict[str, bytes]) -> dict[str, bytes]:
    """The Space's root: index.html (every registration page on it, this one included) and a README.md that
    makes it a static Space, when it has none (a README of the lab's own is never replaced)."""
    from prereg.outputs.page_html import space_index

    pages = sorted({p for p in (*held, *contents) if _is_registration_page(p)})
    ours = plan.registration_page
    entries = [(p, p.rsplit("/", 1)[-1].removesuffix(".results.html") + (f": {plan.title}" if p == ours else ""))
               for p in pages]
    title = f"{plan.repo_id.split('/')[-1]}: reports"
    out = {"index.html": space_index(title, entries, utc_now()[:10]).encode()}
    if "README.md" not in held:
        out["README.md"] = (f"---\ntitle: {plan.repo_id.split('/')[-1]}\nsdk: static\napp_file: index.html\n"
                            "pinned: false\n---\n\nPre-registered evaluations reported by `fontaine-prereg publish "
                            "--space`: each registration's page, its runs' pages, their videos and rows.\n").encode()
    return out


def _is_registration_page(path: str) -> bool:
    parts = path.split("/")
    return path.endswith(".results.html") and len(parts) >= 2
