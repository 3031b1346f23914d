"""The README stays a front page, and every link in it and in docs/ leads somewhere."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def prose(path: Path) -> str:
    """The file without its fenced code blocks, whose brackets are code, not links."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The fragment ids GitHub gives the file's headings: lower case, punctuation dropped, spaces
    as hyphens, and a repeated id numbered."""
    seen: dict[str, int] = {}
    for heading in HEADING.findall(prose(path)):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(path)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.is_file():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.relative_to(ROOT)}")
    return broken


def test_the_readme_is_a_front_page_of_at_most_250_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_readme_links_every_page_of_the_docs():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in LINK.findall(prose(README))}
    assert PAGES and [page.name for page in PAGES if page.resolve() not in linked] == []


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(path):
    assert broken_links(path) == []
