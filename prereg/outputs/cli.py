"""`fontaine-prereg`: write, validate, freeze, amend, verify, show, report and publish pre-registrations.

Exit codes: 0 done; 1 `verify` found the document not frozen or modified, or `publish` could not
reach the hub or was refused (nothing published); 2 bad input (an invalid or modified document, a
missing file, an unknown arm, no Hugging Face token). Bad input never prints a traceback: the
message says what, where (file:line) and what to do. Errors are mapped to their line and code in
one place, prereg.core.errors.run_cli, by class.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

from prereg.core.argcheck import parse_once
from prereg.core.errors import EXIT_DONE as EXIT_OK
from prereg.core.errors import EXIT_FAILED, PreregError, RunFailed, UsageError, run_cli
from prereg.core.errors import EXIT_USAGE as EXIT_BAD_INPUT
from prereg.core.untrusted import say
from prereg.core.words import plural
from prereg.document.fields import NAME_RE
from prereg.document.model import describe_tripwires, seeds_text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return run_cli("fontaine-prereg", lambda: _main(argv))


def _main(argv: list[str]) -> int:
    from prereg.stats.paired_optimal import announcing

    args = parse_once(_parser(), argv)  # a flag given twice is refused (argparse would silently keep the last)
    # a design computed rather than read back takes seconds: said on stderr as it starts (stdout stays the answer)
    with announcing(lambda line: say(f"({line})", file=sys.stderr, flush=True)):
        return args.func(args)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own exit code is 2 as well; keep it, add a hint
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fontaine-prereg", description=__doc__.split("\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="Format and rules: docs/prereg.md. Examples: prereg/examples/.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("new", help="write a template pre-registration")
    s.add_argument("path", nargs="?", default="prereg.md")
    s.add_argument("--id", dest="prereg_id", default=None, help="default: the file name")
    s.add_argument("--title", default="TITLE")
    s.set_defaults(func=cmd_new)

    s = sub.add_parser("validate", help="check a document; every problem names its field and line")
    s.add_argument("file")
    s.set_defaults(func=cmd_validate)

    s = sub.add_parser("freeze", help="seal the base section, or the newest amendment")
    s.add_argument("file")
    s.set_defaults(func=cmd_freeze)

    s = sub.add_parser("amend", help="append an amendment (a template, or an arm copied with changes)")
    s.add_argument("file")
    s.add_argument("--title", default="")
    s.add_argument("--why", default="", help="the amendment's plain words")
    s.add_argument("--from-arm", default=None, help="copy this arm ...")
    s.add_argument("--name", default=None, help="... under this new name ...")
    s.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="... with these changes, e.g. --set decode=grammar-masked (repeatable)")
    s.add_argument("--yaml", dest="yaml_file", default=None,
                   help="a YAML file with the amendment's arms/protocol/reads/gates/decision_rules")
    s.add_argument("--freeze", action="store_true", help="freeze the amendment right away")
    s.set_defaults(func=cmd_amend)

    s = sub.add_parser("verify", help="say whether the frozen parts are unchanged (exit 1 if not)")
    s.add_argument("file")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("show", help="summary: arms, protocol, gates (and where each comes from), rules, freeze "
                                    "state, and the registration's timeline")
    s.add_argument("file")
    s.add_argument("--runs-dir", action="append", default=None, metavar="DIR",
                   help="where its runs are, for the timeline (repeatable; default: runs)")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("launch-spec", help="the settings fontaine-eval takes for an arm, as JSON")
    s.add_argument("file")
    s.add_argument("--arm", required=True)
    s.set_defaults(func=cmd_launch_spec)

    s = sub.add_parser("report", help="compute the frozen reads of runs and append the results")
    s.add_argument("file")
    s.add_argument("--run", dest="runs", action="append", default=[], metavar="ARM=RUN_DIR", required=True,
                   help="the run directory of an arm (repeatable; give the comparator arm's run too)")
    s.add_argument("--no-append", action="store_true", help="write results.md and chart.png only")
    s.add_argument("--unregistered", action="store_true",
                   help="read runs that were not launched from this registration (rows from elsewhere): every "
                        "output is labelled UNREGISTERED in its first line and nothing is appended to the document")
    s.add_argument("--json", action="store_true", help="print the reads as JSON")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("publish", help="upload reported results to a Hugging Face dataset repo and/or the pages to a "
                                       "static Space (one commit each)",
                       description="Upload a registration's reported results (results files, charts, rows, manifests, "
                                   "the videos the plan names) to a Hugging Face dataset repo (--repo), and/or its "
                                   "pages (results.html) with every file they link to a static Space (--space), each "
                                   "in one commit of the files the repo does not hold already, and record the commit "
                                   "and links in each run's results files. The token is huggingface_hub's own "
                                   "(HF_TOKEN, or `hf auth login`); HF_ENDPOINT picks the hub.")
    s.add_argument("file")
    s.add_argument("--repo", default=None, metavar="OWNER/NAME", help="the dataset repo (created if missing)")
    s.add_argument("--space", default=None, metavar="OWNER/NAME",
                   help="the lab's reports Space: a static Space (created if missing) that gets the pages and what they link")
    s.add_argument("--run", dest="runs", action="append", default=[], metavar="ARM=RUN_DIR",
                   help="a reported run of an arm (repeatable); default: the newest reported run of each arm in --runs-dir")
    s.add_argument("--runs-dir", default="runs", help="where to find the runs without --run (default: runs)")
    s.add_argument("--path-in-repo", default=None, metavar="FOLDER", help="the folder in the repo (default: the prereg id)")
    s.add_argument("--revision", default=None, metavar="BRANCH", help="the branch to commit to (created if missing; "
                                                                      "default: main)")
    s.add_argument("--private", action="store_true", help="create the repo private (an existing repo keeps its visibility)")
    s.add_argument("--videos", choices=("named", "all", "none"), default="named",
                   help="named (default): the filmed successes, the worst knock-away and the seeds the plan's video_draw "
                        "names; all: every filmed episode; none")
    s.add_argument("--video-seeds", default="", metavar="6,28", help="more seeds whose videos to share (with named)")
    s.add_argument("--dry-run", action="store_true", help="list what would be uploaded, with sizes; send nothing")
    s.set_defaults(func=cmd_publish)

    s = sub.add_parser("import-real", help="import real trials recorded elsewhere (CSV or JSON lines) into a run's "
                                           "real.jsonl, all or nothing")
    s.add_argument("file", help="the pre-registration")
    s.add_argument("trials", help="the CSV (with a header row) or JSON-lines file of trials")
    s.add_argument("--arm", required=True)
    s.add_argument("--run", required=True, metavar="RUN_DIR", help="the arm's sim run the trials pair with")
    s.add_argument("--operator", default=None, help="who ran the trials, where the file has no operator column")
    s.add_argument("--checkpoint-sha256", default=None, metavar="SHA",
                   help="the checkpoint's sha256, where the file has no checkpoint_sha256 column")
    s.add_argument("--dry-run", action="store_true", help="check every row and say what would be written; write nothing")
    s.set_defaults(func=cmd_import_real)
    return p


# ---------------------------------------------------------------- commands


def cmd_new(args) -> int:
    from prereg.document.template import render

    path = Path(args.path)
    if path.exists():
        raise PreregError(f"{path}: already exists; choose another path (new never overwrites)")
    if not path.parent.is_dir():
        raise PreregError(f"{path.parent}: no such folder" if not path.parent.exists() else f"{path.parent}: not a folder")
    if args.prereg_id is not None and not NAME_RE.match(args.prereg_id):
        raise PreregError(f"--id {args.prereg_id!r}: an id is letters, digits, '-' and '_', starting with a letter or "
                          "a digit (it names the runs' folders)")
    pid = args.prereg_id or "".join(c if c.isalnum() or c in "-_" else "-" for c in path.stem) or "my-eval"
    try:  # created, never opened over something: a link (even a dangling one) or a path made since is refused
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise PreregError(f"{path}: already exists; choose another path (new never overwrites)") from None
    except OSError as exc:
        raise PreregError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(render(pid, args.title))
    say(f"wrote {path}: edit the arms, protocol, reads, gates and decision rules, then\n"
          f"  fontaine-prereg validate {path}\n  fontaine-prereg freeze {path}")
    return EXIT_OK


def cmd_validate(args) -> int:
    from prereg.document.read import load

    doc = load(args.file)
    if doc.problems:
        for pr in doc.problems:
            say(pr.render(str(doc.path)), file=sys.stderr)
        say(f"{doc.path}: {len(doc.problems)} problem(s)", file=sys.stderr)
        return EXIT_BAD_INPUT
    arms = ", ".join(a.name for a in doc.arms())
    lines, refusals = _comparison_advice(doc)
    # its first line is the verdict on the plan: "valid" never heads a plan it then refuses
    head = "valid" if not refusals else f"well-formed, but refused ({len(refusals)} problem(s) below)"
    say(f"{doc.path}: {head} ({doc.prereg_id}; arms: {arms})")
    _print_savings(doc)
    _print_power(doc)
    _print_real(doc)
    for line in variants_budget_lines(doc):
        say(line)
    if lines:
        say("\n".join(lines))
    return _refused(doc, refusals, "") if refusals else EXIT_OK


def _print_real(doc) -> None:
    """Each registered real read and the seeds it selects, in the order the operator runs them (docs/real.md)."""
    from prereg.document.real_spec import real_spec_of, selected_seeds

    for a in doc.arms():
        got = real_spec_of(doc, a.name)
        if got is not None:
            seeds = selected_seeds(doc, a.name)
            say(f"real trials of {a.name}: {got[0].describe()}; seeds in order: {', '.join(map(str, seeds[:20]))}"
                + (f" ... ({len(seeds)})" if len(seeds) > 20 else ""))


def variants_budget_lines(doc) -> list[str]:
    """A crossed design's budget (issue 48), a line per section with arms and variants: seeds x arms x
    (1 + variants) episodes (a comparison: its max seeds), `base` always run beside the listed variants."""
    from prereg.stats.variants_decide import decision_subject

    out = []
    for sm in doc.sections:
        p = sm.protocol
        if p is None or not p.variants or not sm.arms:
            continue
        seeds = sm.comparison.seeds_cap(len(p.seeds)) if sm.comparison is not None else len(p.seeds)
        each = 1 + len(p.variants)
        out.append(f"crossed design ({sm.section.name}): {seeds} seeds x {plural(len(sm.arms), 'arm')} x "
                   f"(1 + {plural(len(p.variants), 'variant')}: base, {', '.join(p.variants)}) = "
                   f"{seeds * len(sm.arms) * each} episodes; the decision reads "
                   f"{decision_subject(p.read_variant, p.variants)} (every episode count "
                   f"above is of its seeds: each seed costs {each} episodes an arm)")
    return out


def _print_savings(doc) -> None:
    """What curtailment buys: expected episodes per arm at a few success rates (prereg/stats/curtail.py)."""
    from prereg.stats.curtail import savings_table

    lines = savings_table(doc)
    if lines:
        say("stopping early: curtailment (once no remaining seed can change a decision rule; simulated, "
              "400 runs, seeded) and any registered sequential test (exact):")
        say("\n".join(lines))


def _print_power(doc) -> None:
    """What the planned seeds can detect, before any GPU-hour is spent (prereg/stats/power.py, reads.power)."""
    from prereg.stats.power import power_lines

    lines = power_lines(doc)
    if lines:
        say("\n".join(lines))


def _comparison_advice(doc, sections=None) -> tuple[list[str], list[str]]:
    """(lines, refusals): each registered comparison's advice before spending (prereg/stats/operating.py: the
    registered test and every test the plan could register instead, against the batch and the information
    floor), and, positioned (FILE:LINE: comparison.test: ...), the refusal of each registered test that cannot
    reach its registered power within its max seeds. `sections`: only these sections' comparisons."""
    from prereg.stats.operating import comparison_advice
    from prereg.stats.step import StepUnavailable

    lines, refusals = [], []
    for sm in doc.sections:
        spec = sm.comparison
        if spec is None or sm.protocol is None or (sections is not None and sm.section.name not in sections):
            continue
        if spec.test == "step":
            say(f"  (STEP's policy for {spec.seeds_cap(len(sm.protocol.seeds))} seeds: built once by "
                  "sequentialized-barnard-tests and cached; a minute at 200 seeds)", flush=True)
        try:
            advice = comparison_advice(spec, len(sm.protocol.seeds), power_plan=sm.reads.power)
        except StepUnavailable as exc:
            lines.append(f"comparison registered: {spec.describe()}; {exc}")
            continue
        lines += advice.lines
        if advice.refusal:
            refusals.append(f"{doc.path}:{spec.line or 0}: comparison.test: {advice.refusal}")
    return lines, refusals


def _refused(doc, refusals: list[str], what: str) -> int:
    for line in refusals:
        say(line, file=sys.stderr)
    say(f"{doc.path}: {len(refusals)} problem(s){what}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_freeze(args) -> int:
    from prereg.document.read import load
    from prereg.document.seal import freeze

    before = load(args.file)
    lines: list[str] = []
    if before.ok:  # the open section's comparison is read before it is sealed: a refused one writes nothing
        opened = {sm.section.name for sm in before.sections if not sm.section.sealed}
        lines, refusals = _comparison_advice(before, opened)
        if refusals:
            if lines:
                say("\n".join(lines))
            return _refused(before, refusals, ": not frozen, nothing written")
    res = freeze(args.file)
    if res is None:
        say(f"{args.file}: every section is already frozen; nothing to do "
              f"(`fontaine-prereg amend {args.file}` to register a change)")
        return EXIT_OK
    say(f"{args.file}: froze {res.section} at {res.frozen_at}\n  sha256 {res.sha256}\n"
          f"  tool commit {res.tool_commit}\n  seal on line {res.seal_line}")
    doc = load(args.file)
    _print_savings(doc)
    _print_power(doc)
    for line in variants_budget_lines(doc):
        say(line)
    if lines:
        say("\n".join(lines))
    return EXIT_OK


def cmd_amend(args) -> int:
    from prereg.document.seal import amend, freeze

    data = {}
    if args.yaml_file:
        from prereg.core.safe_read import Unreadable, read_regular
        from prereg.core.yamlpos import load_with_lines
        from prereg.document.read import DOC_MAX_BYTES

        try:  # bounded and never blocking (a FIFO hung it), read as a document's YAML is (no aliases, no deep nesting)
            data = load_with_lines(read_regular(args.yaml_file, DOC_MAX_BYTES).decode("utf-8"))[0] or {}
        except FileNotFoundError:
            raise PreregError(f"{args.yaml_file}: no such file") from None
        except Unreadable as exc:
            raise PreregError(f"{args.yaml_file}: cannot be read: {exc.why}") from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # PosYAMLError is a ValueError
            raise PreregError(f"{args.yaml_file}: cannot be read as YAML ({exc})") from None
        if not isinstance(data, dict):
            raise PreregError(f"{args.yaml_file}: must be a mapping (arms, protocol, reads, gates, decision_rules)")
    sets = {}
    for item in args.sets:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise PreregError(f"--set {item!r}: expected FIELD=VALUE, e.g. --set decode=grammar-masked")
        sets[key.strip()] = yaml.safe_load(value) if value.strip() else None
    n = amend(args.file, title=args.title, why=args.why, data=data, from_arm=args.from_arm,
              name=args.name, sets=sets)
    say(f"{args.file}: appended amendment {n}")
    if args.freeze:
        res = freeze(args.file)
        say(f"  froze {res.section}: sha256 {res.sha256}")
    else:
        say(f"  edit it (its ```yaml block and plain words), then `fontaine-prereg freeze {args.file}`")
    return EXIT_OK


def cmd_verify(args) -> int:
    from prereg.document.read import load
    from prereg.document.seal import CHAIN, CHANGED, INTACT, verify_layout

    doc = load(args.file)
    ver = verify_layout(doc.layout)
    for c in ver.checks:
        mark = {INTACT: "ok", CHANGED: "CHANGED", CHAIN: "CHAIN BROKEN"}.get(c.state, "open")
        say(f"{doc.path}:{c.line}: [{mark}] {c.message}")
    if not ver.frozen:
        say(f"{doc.path}: not frozen (`fontaine-prereg freeze {doc.path}`)", file=sys.stderr)
        return EXIT_FAILED
    if not ver.ok:
        say(f"{doc.path}: DOES NOT VERIFY: a frozen section was modified; revert it (e.g. `git diff`), "
              "and register changes as amendments", file=sys.stderr)
        return EXIT_FAILED
    say(f"{doc.path}: verified")
    return EXIT_OK


def cmd_show(args) -> int:
    from prereg.document.read import load
    from prereg.document.seal import verify_layout
    from prereg.stats.variants_decide import decision_subject

    doc = load(args.file)
    ver = verify_layout(doc.layout)
    say(f"{doc.prereg_id}: {doc.title}  (created {doc.created})")
    for sm in doc.sections:
        chk = ver.check(sm.section.name)
        state = chk.message if chk else ""
        say(f"\n[{sm.section.name}] {sm.title if sm.section.number else ''}  -- {state}")
        pr = sm.protocol
        if pr:
            say(f"  protocol: {seeds_text(pr.seeds)}, {pr.episode_seconds:g} s, workers {pr.workers}, "
                  f"video draw {pr.video_draw}")
            if pr.variants:  # a crossed design: every seed on base and on each variant
                inline = " (declared inline)" if pr.variant_declarations else ""
                say(f"  variants: base, {', '.join(pr.variants)}{inline}; the decision reads "
                    f"{decision_subject(pr.read_variant, pr.variants)}; "
                    f"camera variants {'pooled' if pr.pool_cameras else 'read apart'}")
        g = sm.gates
        gates = [f"gpu_hours {g.gpu_hours:g}" if g.gpu_hours is not None else "no GPU-hour gate"]
        if g.pace_limit_hours is not None:
            gates.append(f"pace {g.pace_limit_hours:g} h after {g.pace_after_episodes} episodes")
        if g.decided:
            gates.append(f"decided: {g.decided}")
        tripwires = describe_tripwires(g.tripwires)
        if tripwires:
            gates.append(tripwires)
        say(f"  gates: {', '.join(gates)}")
        if sm.section.number:  # an amendment's protocol, gates and reads merge key by key over the section before
            for part in ("protocol", "gates", "reads"):
                took = sm.inherited(part)
                if took:
                    say(f"  inherits {part}: " + ", ".join(f"{k} (from {src})" for k, src in sorted(took.items())))
        for a in sm.arms:
            bits = [a.policy] + [f"{k}={getattr(a, k)}" for k in
                                 ("checkpoint", "revision", "fast_revision", "decode", "convmap", "norm_tag",
                                  "dtype", "workers",
                                  "flow_steps", "grasp_miss", "grasp_drop") if getattr(a, k) is not None]
            if a.convmap_overrides:
                bits.append("overrides=" + ",".join(a.convmap_overrides))
            say(f"  arm {a.name}: {' '.join(bits)}")
        for c in sm.reads.comparators:
            say(f"  comparator: {c.name} for {', '.join(c.for_arms) if c.for_arms else 'every other arm'}")
        for r in sm.rules:
            say(f"  rule: if {r.condition} -> {r.action}")
    for pr in doc.problems:
        say("problem: " + pr.render(str(doc.path)), file=sys.stderr)
    if doc.layout.results:
        say(f"\nresults sections: {', '.join(b.key + (' (superseded)' if b.superseded else '') for b in doc.layout.results)}")
    from prereg.outputs.timeline import timeline

    runs_dirs = [Path(d) for d in (args.runs_dir or ["runs"])]
    say(f"\ntimeline (runs from {', '.join(map(str, runs_dirs))}; !! = a section frozen after data it is read against):")
    for e in timeline(doc, runs_dirs):
        say(f"  {e.line()}")
    return EXIT_BAD_INPUT if doc.problems else EXIT_OK


def cmd_launch_spec(args) -> int:
    from prereg.document.launch import resolve_launch

    spec = resolve_launch(args.file, args.arm)
    say(json.dumps(spec.as_dict(), indent=2))
    return EXIT_OK


def cmd_report(args) -> int:
    from prereg.outputs.report import build_report, parse_run_args

    runs = parse_run_args(args.runs)
    rep = build_report(args.file, runs, append=not args.no_append, unregistered=args.unregistered)
    if args.json:
        say(json.dumps(rep.as_dict(), indent=2, default=str))
    else:
        say(rep.summary_text())
    return EXIT_OK


def cmd_import_real(args) -> int:
    from prereg.outputs.real_import import import_real

    got = import_real(args.file, args.arm, args.run, args.trials, operator=args.operator,
                      checkpoint_sha256=args.checkpoint_sha256, dry_run=args.dry_run)
    say(got.summary(args.arm, Path(args.run), args.dry_run))
    return EXIT_OK


def cmd_publish(args) -> int:
    from prereg.outputs.publish import plan_publish
    from prereg.outputs.publish_hub import hub_endpoint
    from prereg.outputs.publish_space import plan_space
    from prereg.outputs.report import parse_run_args

    if not args.repo and not args.space:
        raise UsageError("publish where? --repo OWNER/NAME (a dataset: the files) and/or --space OWNER/NAME (a static "
                         "Space: the pages)")
    seeds = []
    for s in (x.strip() for x in args.video_seeds.split(",")):
        if s and not (s.isascii() and s.isdigit()):
            raise UsageError(f"--video-seeds {args.video_seeds!r}: whole seed numbers separated by commas, e.g. 6,28")
        if s:
            seeds.append(int(s))
    runs = parse_run_args(args.runs) or None
    plans = []
    if args.repo:
        plans.append(plan_publish(args.file, runs, repo_id=args.repo, runs_dir=args.runs_dir,
                                  path_in_repo=args.path_in_repo, revision=args.revision, videos=args.videos,
                                  video_seeds=tuple(seeds)))
    if args.space:
        plans.append(plan_space(args.file, runs, repo_id=args.space, runs_dir=args.runs_dir,
                                path_in_repo=args.path_in_repo, revision=args.revision))
    endpoint = hub_endpoint()
    if args.dry_run:
        for plan in plans:
            say("\n".join(plan.lines(endpoint)))
        say("dry run: nothing uploaded, nothing recorded")
        return EXIT_OK
    for plan in plans:
        _publish_one(plan, args.private)
    return EXIT_OK


def _publish_one(plan, private: bool) -> None:
    """One repo's commit (or none, when it holds every file already) and its record in the runs' results files."""
    from prereg.outputs.page import PAGE
    from prereg.outputs.publish import SPACE, record
    from prereg.outputs.publish_hub import publish

    for n in plan.notes:
        say(f"note: {n}")
    pub = publish(plan, private=private)
    if not pub.sent:
        say(f"nothing sent: {plan.repo_id} @ {pub.revision} already holds these {pub.total} files (commit "
              f"{pub.commit[:12]}); no commit made, the records in the runs' results files are left as they were")
        return
    say(f"published: commit {pub.commit} ({pub.commit_url})")
    for run in plan.runs:
        where = pub.page_url(f"{run.folder}/{PAGE}") if plan.repo_type == SPACE else pub.tree_url(run.folder)
        say(f"  {run.arm}: {where}")
    if plan.repo_type == SPACE and plan.registration_page:
        say(f"  the registration: {pub.page_url(plan.registration_page)}")
    try:
        written = record(plan, pub)
    except OSError as exc:
        raise RunFailed(f"published as commit {pub.commit} ({pub.commit_url}) but could not record it in the runs' "
                        f"results files ({exc}); the commit stands") from None
    for path in written:
        say(f"  recorded in {path}")


if __name__ == "__main__":
    sys.exit(main())
