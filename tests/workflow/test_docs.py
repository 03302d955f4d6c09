"""The README is a front door and every page it links exists; the docs' relative links and the paths they
name in backquotes resolve."""

import re

from support import REPO

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), REPO / "workflow/README.md",
         REPO / "config/README.md"]


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    text = "\n".join(lines)
    for section in ("## The two commands", "## Three ways in", "## Where to go next"):
        assert section in text


def test_every_relative_link_of_the_docs_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken


def test_the_readme_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages and {p for p in pages if f"docs/{p}" not in readme} == set()
    assert "docs/methods/README.md" in readme


def test_every_methods_page_is_in_the_methods_index_and_names_its_code():
    index = (REPO / "docs/methods/README.md").read_text()
    pages = sorted(p for p in (REPO / "docs/methods").glob("*.md") if p.name != "README.md")
    assert len(pages) >= 10
    for page in pages:
        assert f"]({page.name})" in index, page.name
        code = re.search(r"^Code: (.+)$", page.read_text(), re.M)
        assert code, f"{page.name}: no 'Code:' line"
        for path in re.findall(r"`(workflow/[\w./-]+)`", code.group(1)):
            assert (REPO / path).exists(), (page.name, path)


def test_the_repository_paths_the_docs_name_exist():
    """`workflow/...`, `tests/...`, `config/...` and `resources/...` paths in backquotes (no wildcards or
    placeholders) are files or folders of the repository."""
    named = re.compile(r"`((?:workflow|tests|config|docs|profiles|envs|notebooks)/[\w./-]+)`")
    missing = []
    for page in PAGES:
        for path in named.findall(page.read_text()):
            if any(c in path for c in "<>*{}") or path.endswith("/shards/"):
                continue
            if not (REPO / path.rstrip("/")).exists():
                missing.append(f"{page.relative_to(REPO)}: {path}")
    assert not missing, missing
