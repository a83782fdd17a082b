#!/usr/bin/env python3
"""Regenerate every generated file of the repository, or check that none is stale.

Some files show what the code does (the rule list, the rule pages, the samples of the
commands' output, the gallery's verdicts, the HTML report, the accuracy page); a test
compares each with a fresh run, so they are regenerated, never edited by hand. This is the
one command that does it, from the code of the checkout it sits in (its ``src/`` goes first
on the path, also for the commands the samples run)::

    python tools/regen.py                    # rewrite every stale file, in order
    python tools/regen.py --check            # write nothing; exit 1 listing the stale files
    python tools/regen.py rules pages        # only these targets
    python tools/regen.py --skip accuracy    # all but these

The targets, in the order they run (a later one reads what an earlier one wants written:
the samples of docs/gallery.md are filled in after its table):

========  ==========================================================  ==============================
target    files                                                       checked by
========  ==========================================================  ==============================
rules     ``RULES.md``                                                ``tests/project/test_docs.py``
pages     ``docs/rules/*.md`` (a page of no id is removed)            ``tests/project/test_docs.py``
gallery   ``EVIDENCE_MATRIX.md``, ``tests/golden/gallery.json``,       ``tests/project/test_gallery.py``
          the table in ``docs/gallery.md``
samples   the ```` ```console ```` samples of ``README.md``, ``docs/*.md``  ``tests/project/test_readme_samples.py``
html      ``evidence/diverge_report.html``                            ``tests/render/test_html.py``
accuracy  ``evidence/accuracy.md`` (needs ``../shared``)              ``tests/project/test_accuracy_page.py``
========  ==========================================================  ==============================

When ``html`` rewrites the report page it also retakes its screenshot,
``evidence/diverge_report.png``, where Chromium is installed; ``--check`` does not compare
the screenshot (its pixels depend on Chromium's version and fonts). ``accuracy`` is skipped,
with a line saying so, where ``../shared/corpus`` is absent.

Exit status: 0 every file is current (or was rewritten), 1 ``--check`` found stale files,
2 a target name that does not exist.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# The checkout's code, not an installed copy: here and in every command a sample runs.
sys.path.insert(0, str(REPO / "src"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)


class Tree:
    """The files the targets want, over the checkout as it is on disk.

    ``want[path]`` is a file's wanted text, or ``None`` for a file that must not exist; a
    target reads a file through :meth:`read`, so it sees what an earlier target wants there.
    ``after_write`` holds what to do once the stale files are written (each is given the
    paths written; nothing runs under ``--check``).
    """

    def __init__(self) -> None:
        self.want: dict[Path, str | None] = {}
        self.after_write: list[Callable[[list[Path]], None]] = []

    def read(self, path: Path) -> str:
        """``path``'s text as wanted so far, else as on disk."""
        if path in self.want and self.want[path] is not None:
            return self.want[path]
        return path.read_text(encoding="utf-8")

    def stale(self) -> list[Path]:
        """The wanted files whose disk state differs (missing, other text, or present where
        they must not be), in the order they were wanted."""
        out = []
        for path, text in self.want.items():
            on_disk = path.read_text(encoding="utf-8") if path.is_file() else None
            if on_disk != text:
                out.append(path)
        return out

    def write(self, paths: list[Path]) -> None:
        """Write (or remove) each of ``paths`` as wanted."""
        for path in paths:
            text = self.want[path]
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")


def _evidence(name: str) -> ModuleType:
    """The script ``evidence/<name>.py`` as a module (the evidence scripts are no package)."""
    spec = importlib.util.spec_from_file_location(f"evidence_{name}", REPO / "evidence" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def _in_repo():
    """Run from the repository root: reports show paths as given, relative and stable."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        yield
    finally:
        os.chdir(cwd)


def rules(tree: Tree) -> str | None:
    """``RULES.md``: ``trainproof rules --markdown``."""
    from trainproof.rules.docs import rules_markdown

    tree.want[REPO / "RULES.md"] = rules_markdown()
    return None


def pages(tree: Tree) -> str | None:
    """``docs/rules/``: a page per id, the index and the thresholds page; any other
    ``.md`` there (the page of an id that no longer exists) is removed."""
    from trainproof.rules.docs import pages as rule_pages

    folder = REPO / "docs" / "rules"
    want = rule_pages()
    for path in sorted(folder.glob("*.md")):
        if path.name not in want:
            tree.want[path] = None
    for name, text in want.items():
        tree.want[folder / name] = text
    return None


def gallery(tree: Tree) -> str | None:
    """The gallery's evidence (``evidence/gallery.py``): every gallery log judged."""
    import json

    g = _evidence("gallery")
    rows = g.collect()
    tree.want[g.MATRIX] = g.render(rows)
    tree.want[g.GOLDEN] = json.dumps(g.golden(rows), indent=1, sort_keys=True) + "\n"
    tree.want[g.README] = g.readme_with_table(tree.read(g.README), rows)
    return None


def samples(tree: Tree) -> str | None:
    """The console samples of the README and the guides (``evidence/readme_samples.py``):
    each sample's command run from the repository root."""
    s = _evidence("readme_samples")
    for page in s.pages():
        text = tree.read(page)
        if s.samples(text):
            tree.want[page] = s.regenerate(text)
    return None


def html(tree: Tree) -> str | None:
    """The HTML report of ``examples/diverge`` (``evidence/html_screenshot.py``), and its
    screenshot retaken once the page is rewritten."""
    shot = _evidence("html_screenshot")
    page = REPO / "evidence" / "diverge_report.html"
    with _in_repo():
        tree.want[page] = shot.report_page()

    def screenshot(written: list[Path]) -> None:
        if page not in written:
            return
        if not shutil.which(shot.CHROMIUM):
            print(f"html: no Chromium at {shot.CHROMIUM}: evidence/diverge_report.png not retaken")
            return
        png = page.with_suffix(".png")
        proc = shot.chromium_screenshot(page, png)
        if proc.returncode != 0:
            raise RuntimeError(f"Chromium failed to photograph {page.name}: {proc.stderr[-2000:]}")
        print(f"retook {png.relative_to(REPO)}")

    tree.after_write.append(screenshot)
    return None


def accuracy(tree: Tree) -> str | None:
    """``evidence/accuracy.md``: the shared scorecard over the labelled corpus of real runs
    (``evidence/accuracy.py``), every file judged in this process; skipped where
    ``../shared/corpus`` is absent."""
    if not (SHARED / "corpus" / "MANIFEST.tsv").exists():
        return f"skipped: no corpus at {SHARED / 'corpus'}"
    a = _evidence("accuracy")
    tree.want[a.OUT] = a.render(*a.run_scorecard(a.InProcess()))
    return None


#: Every target, in the order it runs. Each adds the files it wants to the tree and returns
#: ``None``, or a line saying why it did nothing.
TARGETS: dict[str, Callable[[Tree], str | None]] = {
    "rules": rules,
    "pages": pages,
    "gallery": gallery,
    "samples": samples,
    "html": html,
    "accuracy": accuracy,
}


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's documentation); returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", metavar="TARGET", help=f"targets to run (default: all): {', '.join(TARGETS)}")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the stale files")
    ap.add_argument("--skip", action="append", default=[], metavar="TARGET", help="a target not to run (repeatable)")
    args = ap.parse_args(argv)
    unknown = [t for t in [*args.targets, *args.skip] if t not in TARGETS]
    if unknown:
        print(f"unknown target {', '.join(unknown)}: the targets are {', '.join(TARGETS)}", file=sys.stderr)
        return 2
    chosen = [t for t in TARGETS if (not args.targets or t in args.targets) and t not in args.skip]
    tree = Tree()
    for name in chosen:
        why = TARGETS[name](tree)
        if why:
            print(f"{name}: {why}")
    stale = tree.stale()
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(REPO).as_posix()}")
        print(f"{len(stale)} stale file(s): run python tools/regen.py" if stale else "every generated file is current")
        return 1 if stale else 0
    tree.write(stale)
    for path in stale:
        print(f"{'removed' if tree.want[path] is None else 'wrote'} {path.relative_to(REPO).as_posix()}")
    for step in tree.after_write:
        step(stale)
    if not stale:
        print("every generated file is current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
