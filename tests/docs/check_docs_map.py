#!/usr/bin/env python3
"""Checks that docs/DESIGN.md is a map whose pages point at the real tree.

Usage: check_docs_map.py ROOT   (exit 0: ok; 1: every problem on its own line)

Over docs/DESIGN.md and docs/design/*.md:
  - DESIGN.md has at most MAX_MAP_LINES lines;
  - every docs/design/*.md page is linked from DESIGN.md;
  - every relative link [text](target) names a file or folder that exists,
    and its #anchor, when the target is a markdown file, one of its headings;
  - every repository path the prose names (in backticks, or bare with a file
    extension) exists: a file, a folder, a glob (`ucx_*`) or a stem whose
    .h/.cc exists; paths under ../shared are not checked (not in the tree);
  - every design page names at least one file of the tree;
  - README.md's relative links resolve too (its paths are not checked: it
    names build outputs such as build-fuzz/).
Fenced code blocks are skipped (the layering diagram is not a list of paths).
"""
import glob
import os
import re
import sys

MAX_MAP_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")
PATH_CHARS = r"[A-Za-z0-9_.*+/-]"
STEM_SUFFIXES = ("", ".h", ".cc")


def top_dirs(root):
    return sorted(
        d for d in os.listdir(root)
        if not d.startswith(".") and not d.startswith("build") and os.path.isdir(os.path.join(root, d))
    )


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    with open(path, encoding="utf-8") as f:
        for _, line in prose_lines(f.read()):
            m = re.match(r"#{1,6}\s+(.*)", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else f"{base}-{n}")
    return result


def path_exists(root, path):
    full = os.path.join(root, path)
    if any(c in path for c in "*?["):
        return bool(glob.glob(full))
    return any(os.path.exists(full + s) for s in STEM_SUFFIXES)


def repo_paths(line, dirs):
    """Repository paths a line names: code spans that are paths, and bare
    paths with a file extension."""
    prefix = "(?:" + "|".join(re.escape(d) for d in dirs) + ")/"
    whole = re.compile(prefix + PATH_CHARS + "*")
    found = []
    for span in CODE_SPAN.findall(line):
        if whole.fullmatch(span):
            found.append(span)
    bare = re.compile(r"(?<![\w./`-])(" + prefix + r"[A-Za-z0-9_./+-]*\.[A-Za-z0-9]+)")
    outside_spans = CODE_SPAN.sub(" ", LINK.sub(" ", line))
    for m in bare.finditer(outside_spans):
        found.append(m.group(1).rstrip("."))
    return found


def link_problems(doc, rel, number, line):
    """Relative links of one line that lead nowhere."""
    problems = []
    for target in LINK.findall(line):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file_part, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(doc), file_part)) if file_part else doc
        if not os.path.exists(dest):
            problems.append(f"{rel}:{number}: link to {target}: no such file")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append(f"{rel}:{number}: link to {target}: no heading #{anchor}")
    return problems


def check(root):
    problems = []
    docs = os.path.join(root, "docs")
    design = os.path.join(docs, "DESIGN.md")
    pages = sorted(glob.glob(os.path.join(docs, "design", "*.md")))
    dirs = top_dirs(root)

    with open(design, encoding="utf-8") as f:
        map_text = f.read()
    n = len(map_text.splitlines())
    if n > MAX_MAP_LINES:
        problems.append(f"docs/DESIGN.md: {n} lines, more than {MAX_MAP_LINES}")

    linked = {os.path.normpath(os.path.join(docs, t.split("#")[0])) for t in LINK.findall(map_text)}
    for page in pages:
        if os.path.normpath(page) not in linked:
            problems.append(f"{os.path.relpath(page, root)}: not linked from docs/DESIGN.md")

    readme = os.path.join(root, "README.md")
    for doc in [design] + pages + ([readme] if os.path.exists(readme) else []):
        rel = os.path.relpath(doc, root)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        named_files = 0
        for number, line in prose_lines(text):
            problems += link_problems(doc, rel, number, line)
            if doc == readme:
                continue
            for path in repo_paths(line, dirs):
                if path_exists(root, path):
                    named_files += 1
                else:
                    problems.append(f"{rel}:{number}: names {path}, which does not exist")
        if doc not in (design, readme) and named_files == 0:
            problems.append(f"{rel}: names no file of the tree")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
