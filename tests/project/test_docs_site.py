"""The documentation site builds with warnings as errors, and every guide is in its nav.

``mkdocs build --strict`` (what .ci/run runs) fails on a link to a missing page or anchor
and, with ``validation.omitted_files: warn`` in mkdocs.yml, on a page left out of the nav;
this test builds the site into a temporary folder the same way. It skips where mkdocs is
not installed (the ``docs`` extra).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("mkdocs")
pytest.importorskip("material")
yaml = pytest.importorskip("yaml")


def _config() -> dict:
    return yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


def _nav_pages(nav) -> list[str]:
    """The local pages a nav names (external links left out), depth first."""
    out: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            out += _nav_pages(value)
        elif not re.match(r"[a-z]+://", value):
            out.append(value)
    return out


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    for page in _nav_pages(_config()["nav"]):
        built = page[: -len("index.md")] + "index.html" if page.endswith("index.md") else page[:-3] + "/index.html"
        assert (tmp_path / "site" / built).is_file(), page


def test_every_guide_is_in_the_nav_and_strict_checks_the_rest():
    cfg = _config()
    assert cfg.get("strict") is True
    assert cfg["validation"]["omitted_files"] == "warn", "a page outside the nav must fail the strict build"
    assert cfg["validation"]["anchors"] == "warn"
    nav = set(_nav_pages(cfg["nav"]))
    guides = {p.name for p in (REPO / "docs").glob("*.md")}
    assert guides - nav == set(), f"add these pages to mkdocs.yml's nav: {sorted(guides - nav)}"
    missing = sorted(p for p in nav if not (REPO / "docs" / p).is_file())
    assert missing == [], f"the nav names pages that do not exist: {missing}"
    # The rules' section: their index and the thresholds table; each rule's page is reached
    # from the index (not_in_nav), and strict still checks its links.
    assert {"rules/index.md", "rules/thresholds.md"} <= nav
    assert "/rules/TP-*.md" in cfg.get("not_in_nav", "")


def test_the_build_needs_no_network():
    """No plugin that fetches (social cards, remote includes) and no web fonts."""
    cfg = _config()
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in cfg.get("plugins", [])]
    assert set(plugins) <= {"search"}, plugins
    assert cfg["theme"]["name"] == "material" and cfg["theme"].get("font") is False


def test_the_readme_links_every_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([a-z_]+\.md)(?:#[^)]*)?\)", readme))
    guides = {p.name for p in (REPO / "docs").glob("*.md")}
    assert linked <= guides, sorted(linked - guides)
    assert guides - linked == set(), f"README.md links no page for {sorted(guides - linked)}"
