"""The frame every results page shares (prereg/outputs/page.py writes the pages): its style and its few lines of
script, the document around the sections with the Content-Security-Policy that lets nothing in from another host,
the header, the relative links (to a file, to an arm's seed), and, for a Space, the files a page links and the
Space's index page."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

FONT = "system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"  # the reader's own fonts: nothing is fetched


SCRIPT = """\
addEventListener('hashchange',function(){document.querySelectorAll('.seed video').forEach(function(v){\
if(!v.closest('.seed:target'))v.pause()})});
addEventListener('keydown',function(e){var t=document.querySelector('.seed:target');if(!t)return;\
var go={Escape:t.dataset.back,ArrowRight:t.dataset.next,ArrowLeft:t.dataset.prev}[e.key];\
if(go){location.hash=go;e.preventDefault()}});"""


STYLE = """\
:root{--fg:#1d1d1f;--mute:#5d6066;--line:#d9dbe0;--bg:#fff;--soft:#f5f6f8}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 FONT;color:var(--fg);background:var(--bg)}
main{max-width:1100px;margin:0 auto;padding:12px 14px 60px}
h1{font-size:1.35rem;margin:.4rem 0}h2{font-size:1.12rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line)}
h3{font-size:1rem;margin:1rem 0 .3rem}
code{font:13px/1.3 ui-monospace,Menlo,Consolas,monospace;background:var(--soft);padding:0 3px;border-radius:3px;\
overflow-wrap:anywhere}
.mute{color:var(--mute)}.small{font-size:.85rem}
.banner{background:#fff3cd;border:1px solid #e0c46c;padding:8px;margin:8px 0;font-weight:600}
nav a{margin-right:.8rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;font-size:.9rem}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);white-space:nowrap}
table.sticky th:first-child{position:sticky;left:0;z-index:1}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
table.reads tbody th{white-space:normal;font-weight:500}table.reads .planned{display:block}
ul.completion{margin:.3rem 0;padding-left:1.2rem}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-weight:600;font-size:.85rem;color:#fff}
.holds{background:#1a7f37}.fails{background:#b42318}.undetermined{background:#6e7781}.provisional{background:#9a6700}
.valid{color:#1a7f37;font-weight:600}.invalid{color:#b42318;font-weight:600}
ol.verdicts{padding-left:1.3rem}ol.verdicts li{margin:.5rem 0}
.why{margin:.15rem 0 0;font-size:.88rem;color:var(--mute)}
.swatch{display:inline-block;width:.8em;height:.8em;border-radius:2px;vertical-align:-1px;margin-right:4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85rem;margin:.3rem 0}
.chart{display:flex;align-items:flex-start;margin:.3rem 0}
.chart .axis{flex:none;background:var(--bg)}
.chart .scroll{flex:1 1 auto}.chart .plot{flex:1 1 auto;min-width:0}
.chart svg text{font:12px FONT;fill:var(--fg)}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(44px,1fr));gap:4px;margin:.4rem 0}
.cell{display:block;text-align:center;padding:9px 0;border-radius:4px;color:#111;text-decoration:none;\
font-weight:600;font-size:.85rem;border:1px solid rgba(0,0,0,.12)}
.cell.dark{color:#fff}.cell.film::after{content:" \\25B6";font-size:.65rem}
.seed{display:none;position:fixed;inset:0;z-index:10;background:rgba(20,22,26,.6);overflow-y:auto}
.seed:target{display:block}
.seed .box{background:var(--bg);max-width:980px;margin:2vh auto;padding:10px 14px 18px;border-radius:6px}
.seed .bar{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:baseline}
.seed .bar .close{margin-left:auto;font-weight:600}
.seed table.row{width:100%}.seed table.row td:last-child{overflow-wrap:anywhere;min-width:40%}
.seed video{width:100%;max-height:60vh;background:#000;display:block;margin:.4rem 0}
.seed ul.variants{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));\
gap:6px 12px}.seed ul.variants video{max-height:30vh}table.variants tr.decides th{font-weight:700}\
table.variants tr.pooled{border-top:2px solid var(--line)}
details{margin:.4rem 0}summary{cursor:pointer}
.words p{margin:.4rem 0}
dl.plan{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.3rem 0}
dl.plan dt{color:var(--mute)}dl.plan dd{margin:0}
@media (max-width:600px){body{font-size:14px}th,td{padding:3px 5px}table.reads th,table.reads td{padding:3px 4px}\
.seed .box{margin:0;min-height:100%;border-radius:0}}
""".replace("FONT", FONT)


# ---------------------------------------------------------------- links


@dataclasses.dataclass
class Links:
    """Where the page is and where each arm's seeds open (the page that holds its grid)."""

    page: Path  # this page's file (resolved)
    grid_page: dict[str, Path]  # arm -> the page (file, resolved) holding its grid

    @property
    def here(self) -> Path:
        return self.page.parent

    def seed(self, arm: str, seed: int) -> str | None:
        page = self.grid_page.get(arm)
        if page is None:
            return None
        anchor = "#" + seed_id(arm, seed)
        return anchor if page == self.page else rel(page, self.here) + anchor

    def file(self, path: Path) -> str:
        return rel(path, self.here)


def rel(path: Path, here: Path) -> str:
    """A relative URL from the folder `here` to `path`: what works from disk, a server and a Space alike."""
    return quote(Path(os.path.relpath(Path(path).resolve(), here)).as_posix(), safe="/")


def seed_id(arm: str, seed: int) -> str:
    """The anchor of an arm's seed on the page that holds its grid (`#seed-<arm>-<seed>`)."""
    return f"seed-{slug(arm)}-{seed}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"


# ---------------------------------------------------------------- the frame


def document(title: str, body: list[str]) -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; media-src 'self'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="generator" content="fontaine-prereg report">',
        '<link rel="icon" href="data:,">',  # no favicon request (a 404 on a static server)
        f"<title>{escape(title)}</title>", f"<style>\n{STYLE}</style>", "</head>", "<body>", "<main>",
        *[b for b in body if b], "</main>", f"<script>{SCRIPT}</script>", "</body>", "</html>", ""])


def header(doc, name: str, now: str, unregistered: bool, nav: list[tuple[str, str]]) -> str:
    out = []
    if unregistered:
        out.append('<p class="banner">UNREGISTERED REPORT: rows read with --unregistered; runs not launched from '
                   "this registration are not registered results</p>")
    out.append(f"<h1>Results: {escape(name)}</h1>")
    out.append(f'<p class="mute small">Pre-registration <code>{escape(doc.prereg_id)}</code> '
               f"({escape(doc.path.name)}) · report {escape(now)} · <code>fontaine-prereg report</code></p>")
    if nav:
        out.append("<nav class=small>" + "".join(f'<a href="{h}">{escape(t)}</a>' for h, t in nav) + "</nav>")
    return "<header>" + "\n".join(out) + "</header>"


# ---------------------------------------------------------------- what a page uses (for a Space)


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if v and ((k == "href" and tag in ("a", "link")) or (k in ("src", "poster") and tag in _MEDIA)):
                self.refs.append(v)


_MEDIA = ("video", "audio", "source", "img", "script", "iframe", "embed", "track")


def linked_files(page: Path, root: Path) -> tuple[list[Path], list[str]]:
    """The local files `page` uses (its links and media), following every page it links, each inside `root`;
    and, one line each, the references that leave `root`, name another host, or name a missing file."""
    root = root.resolve()
    todo, seen, files, problems = [page.resolve()], set(), [], []
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        files.append(p)
        if p.suffix != ".html":
            continue
        parser = _Refs()
        parser.feed(p.read_text(encoding="utf-8"))
        for ref in parser.refs:
            parts = urlsplit(ref)
            if ref.startswith("#") or parts.scheme == "data":
                continue
            if parts.scheme or parts.netloc:
                problems.append(f"{p.name} links {ref} on another host")
                continue
            target = (p.parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(root):
                problems.append(f"{p.name} links {unquote(parts.path)}, outside {root.name}/")
            elif not target.is_file():
                problems.append(f"{p.name} links {unquote(parts.path)}, which is not there")
            else:
                todo.append(target)
    return sorted(files), problems


def space_index(title: str, registrations: list[tuple[str, str]], now: str) -> str:
    """The Space's front page: each registration's page on it (path in the Space, its id), newest publish first."""
    items = "".join(f'<li><a href="{quote(path, safe="/")}">{escape(label)}</a> <span class="mute small">'
                    f"{escape(path)}</span></li>" for path, label in registrations)
    body = [f"<header><h1>{escape(title)}</h1><p class=\"mute small\">Pre-registered evaluations reported by "
            f"<code>fontaine-prereg</code>; updated {escape(now)}.</p></header>",
            f'<section><h2>Registrations</h2><ul class="index">{items or "<li>none yet</li>"}</ul></section>']
    return document(title, body)
