"""Every reference of the product's docs resolves, so that a renamed or moved section is noticed.

Covers README.md, docs/*.md and the READMEs they link to (bench/, topics/). Two kinds:

- a relative link: its file exists, and its anchor is one of the file's headings. Anchors are the
  slugs a Markdown renderer such as GitHub's gives headings: lower case, punctuation dropped,
  spaces as hyphens, a repeated heading numbered `-1`, `-2`. Links to other sites are not checked
  (the tests run without the internet).
- a section named in prose, `docs/joiner.md, "Idle partitions"`: the file has a section whose
  name starts with the quoted words, a heading or a paragraph's bold or italic lead
  (`**Drained**`, `- *Open: ...*`).

Code blocks and code spans hold no references.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

__all__: list[str] = []

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "topics" / "README.md"])
PAGES += sorted((ROOT / "docs").glob("*.md"))
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_LEAD = re.compile(r"^\s*(?:- )?(\*\*?)(?!\s)(.+?)\1", re.MULTILINE)
_SECTION_REF = re.compile(r'([\w./-]+\.md),?\s+"([^"]+)"')


def slug(heading: str) -> str:
    """Return the anchor a renderer gives a heading.

    >>> slug("Kafka to Kafka (`python -m bench.peers kafka`)")
    'kafka-to-kafka-python--m-benchpeers-kafka'
    >>> slug("Authentication: what a restore trusts")
    'authentication-what-a-restore-trusts'
    """
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Return every anchor of a page's headings, repeated ones numbered."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """Return the targets of a page's links, outside code."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return _LINK.findall(text)


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Return a page's relative links whose file or anchor does not exist, with the reason."""
    broken: list[str] = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(root)}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading with the anchor #{anchor}")
    return broken


def section_names(page: Path) -> list[str]:
    """Return the names of a page's sections: headings, and paragraphs' bold or italic leads."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    names = _HEADING.findall(text) + [lead for _, lead in _LEAD.findall(text)]
    return [" ".join(name.replace("`", "").split()) for name in names]


def broken_section_refs(page: Path, root: Path = ROOT) -> list[str]:
    """Return the sections a page names in prose (`file.md, "Name"`) that the file does not have."""
    broken: list[str] = []
    text = _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    for file_name, quoted in _SECTION_REF.findall(text):
        name = " ".join(quoted.replace("`", "").split())
        candidates = [page.parent / file_name, root / file_name, root / "docs" / file_name]
        linked = next((path for path in candidates if path.exists()), None)
        if linked is None:
            broken.append(f'{file_name}, "{name}": no such file')
        elif not any(section.startswith(name) for section in section_names(linked)):
            broken.append(f'{file_name}, "{name}": no such section')
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_section_named_in_prose_exists(page: Path) -> None:
    assert broken_section_refs(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checkers_find_a_missing_file_anchor_and_section(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A section: here\n\n**Drained** (a lead).\n\n"
        "- *Fixed: an item.* Text.\n\n"
        "[ok](#a-section-here) [self](#title) `[code](missing.md)`\n"
        "[gone](missing.md) [no anchor](#elsewhere)\n\n"
        'page.md, "A section" and page.md "Drained" and page.md, "Fixed: an item"\n'
        'page.md, "Session 4" and gone.md, "Anything"\n',
        encoding="utf-8",
    )
    assert broken_links(page, tmp_path) == [
        "missing.md: no file missing.md",
        "#elsewhere: no heading with the anchor #elsewhere",
    ]
    assert broken_section_refs(page, tmp_path) == [
        'page.md, "Session 4": no such section',
        'gone.md, "Anything": no such file',
    ]
