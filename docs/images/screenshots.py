"""The README's pictures of the site: the overview, ratchet plot and cluster map of a demo project,
taken with Playwright in Debian's headless Chromium.

    git agora demo --dir /tmp/demo --workers 4 --rounds 6
    git agora -C /tmp/demo/founder site /tmp/demo/site
    python docs/images/screenshots.py /tmp/demo/site docs/images
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SHOTS = {"site-overview.png": "index.html", "site-ratchet.png": "ratchet.html", "site-clusters.png": "clusters.html"}


def main(site: Path, out: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
        for name, path in SHOTS.items():
            page.goto((site / path).resolve().as_uri())
            page.screenshot(path=str(out / name))
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
