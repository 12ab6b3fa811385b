"""The design notes that docstrings and comments cite live in this repository (docs/), and
every section they cite by number is a heading there: a citation is a pointer a reader follows,
so a dangling one is a bug like any other."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (".py", ".c", ".h")
SKIP = {".venv", ".git", "build", "docs"}
CITATION = re.compile(
    r"(?<![\w/])((?:docs/)?(?:spec/[\w-]+|STYLE|ARCHITECTURE)\.md)`?((?:[ ,]+§[\d.]+(?:-§?[\d.]+)?)*)"
)
SECTION = re.compile(r"§?([\d]+(?:\.\d+)?)")


@functools.cache
def _sources() -> list[Path]:
    """Our sources. The walk prunes the skipped directories (and every virtual environment,
    .venv-sdk5 too) instead of filtering after rglob went through them: the venvs hold tens
    of thousands of files, and the walk took ~4 s of each test's time, in both modes."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP and not d.startswith(".venv"))
        found += [Path(folder, f) for f in sorted(files) if f.endswith(SOURCES)]
    return found


def _headings(doc: Path) -> set[str]:
    """ "## 7. Startup" -> "7", "### 3.3 Processing" -> "3.3"."""
    numbers = set()
    for line in doc.read_text(encoding="utf-8").splitlines():
        match = re.match(r"#{2,3} (\d+(?:\.\d+)?)\.? ", line)
        if match:
            numbers.add(match.group(1))
    return numbers


def _citations() -> list[tuple[Path, str, list[str]]]:
    out = []
    for path in _sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in CITATION.finditer(text):
            out.append((path, match.group(1), SECTION.findall(match.group(2))))
    return out


def test_design_notes_are_cited_by_their_path_in_the_repository() -> None:
    bare = [
        f"{path.relative_to(ROOT)}: {doc}"
        for path, doc, _ in _citations()
        if not doc.startswith("docs/")
    ]
    assert not bare, "cite the notes by their path from the repository root:\n" + "\n".join(bare)


def test_every_cited_note_and_section_exists() -> None:
    citations = _citations()
    assert len(citations) > 40  # the docstrings do cite them
    missing = []
    for path, doc, sections in citations:
        target = ROOT / doc
        if not target.is_file():
            missing.append(f"{path.relative_to(ROOT)}: {doc} does not exist")
            continue
        headings = _headings(target)
        missing.extend(
            f"{path.relative_to(ROOT)}: {doc} has no section §{number}"
            for number in sections
            if number not in headings
        )
    assert not missing, "\n".join(missing)
