"""docs/page-*.png: the report's page (results.html) at a phone's width and a desktop's, from a real run.

    .venv/bin/python scripts/page_screenshots.py [--out docs]

Runs the comparison the browser tests run (tests/prereg/test_page_browser.py: two scripted arms of
known skill, seeds 0-5, every seed filmed; about 20 s on 2 cores), reports it, and photographs in the
system's Chromium: the registration's page on a desktop (1280x900), the run's page on a phone (390x844),
and a seed opened on the phone (its video at its first second, its row in words). Each PNG is the
viewport, quantised to 64 colours so it stays small.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prereg.document.seal import freeze  # noqa: E402
from prereg.outputs.page import PAGE, registration_page_name  # noqa: E402
from prereg.outputs.report import build_report  # noqa: E402
from tests.browser import DESKTOP, PHONE, browser, open_page  # noqa: E402
from tests.helpers import run_eval  # noqa: E402
from tests.prereg.test_page_browser import DOC  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    out = Path(args.out)
    root = Path(tempfile.mkdtemp(prefix="page-shots-"))
    doc = root / "compare.md"
    doc.write_text(DOC)
    freeze(doc)
    run = root / "runs" / "page-compare-clumsy-vs-steady"
    done = run_eval("--prereg", str(doc), "--arms", "clumsy,steady", "--run-dir", str(run), timeout=600)
    if done.returncode != 0:
        sys.exit(done.stdout + done.stderr)
    rep = build_report(doc, {"clumsy-vs-steady": run}, append=False)
    reg = rep.registration_md.parent / registration_page_name(rep.registration_md.name)
    with browser() as b:
        shoot(b, DESKTOP, reg.as_uri(), out / "page-desktop.png")
        shoot(b, PHONE, (run / PAGE).as_uri(), out / "page-phone.png")
        shoot(b, PHONE, (run / PAGE).as_uri(), out / "page-phone-seed.png", seed=("clumsy", 2))
    for name in ("page-desktop.png", "page-phone.png", "page-phone-seed.png"):
        print(f"{out / name}: {(out / name).stat().st_size / 1024:.0f} KiB")


def shoot(b, viewport: dict, url: str, path: Path, seed: tuple[str, int] | None = None) -> None:
    from PIL import Image

    w = open_page(b, viewport)
    page = w.page
    page.goto(url, wait_until="load")
    if seed is not None:
        arm, s = seed
        page.locator(f'.grid[data-arm="{arm}"] a.cell[data-seed="{s}"]').click()
        page.locator(".seed:target video").evaluate(
            "async v => { await v.play(); while (v.currentTime < 1.0) await new Promise(r => setTimeout(r, 50)); "
            "v.pause(); }")
    page.screenshot(path=str(path))
    problems = w.problems()
    if problems:
        sys.exit(f"{url}: {problems}")
    with Image.open(path) as img:
        img.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    page.context.close()


if __name__ == "__main__":
    main()
