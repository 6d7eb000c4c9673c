#!/usr/bin/env python3
"""Checks the include layering of src/ against the table in docs/architecture.md.

The table is the fenced block after the line `<!-- layering: module: the modules it may include -->`
in docs/architecture.md, one line per module: `NAME: DEP DEP ...` (core includes nothing). A
production file (src/MODULE/*.cc or *.h, tests excluded) that includes "OTHER/..." where OTHER is not
MODULE itself and not listed for MODULE fails the check; so does a module missing from the table,
and a listed dependency that no file uses any more (the table must say what the code does).
Usage: layering.py [REPO_ROOT] [--graph]  (--graph prints the include graph as found). Exit 1 on a
violation. Run by ctest (Build.IncludeLayeringMatchesTheDocs).
"""
import collections
import pathlib
import re
import sys

MARK = "<!-- layering: module: the modules it may include -->"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def read_table(doc):
    lines = doc.read_text().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == MARK)
    except StopIteration:
        sys.exit(f"layering: {doc}: no line '{MARK}'")
    table, inside = {}, False
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("```"):
            if inside:
                return table
            inside = True
            continue
        if not inside or not line.strip():
            continue
        name, sep, deps = line.partition(":")
        if not sep:
            sys.exit(f"layering: {doc}:{n}: expected 'module: deps', got '{line}'")
        table[name.strip()] = set(deps.split())
    sys.exit(f"layering: {doc}: the block after '{MARK}' is not closed")


def include_graph(src):
    graph = collections.defaultdict(lambda: collections.defaultdict(list))
    modules = set()
    for p in sorted(src.rglob("*")):
        if p.suffix not in (".cc", ".h") or p.name.endswith("_test.cc"):
            continue
        rel = p.relative_to(src)
        if len(rel.parts) < 2:
            continue
        module = rel.parts[0]
        modules.add(module)
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) != module and (src / m.group(1)).is_dir():
                graph[module][m.group(1)].append(f"src/{rel}:{n}")
    return modules, graph


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    modules, graph = include_graph(root / "src")
    if "--graph" in sys.argv:
        for m in sorted(modules):
            print(f"{m}: {' '.join(sorted(graph[m]))}")
        return 0
    table = read_table(root / "docs" / "architecture.md")
    problems = []
    for m in sorted(modules - set(table)):
        problems.append(f"module {m} is not in the layering table of docs/architecture.md")
    for m in sorted(set(table) - modules):
        problems.append(f"the layering table lists {m}, which is no module under src/")
    for m in sorted(modules & set(table)):
        for dep, where in sorted(graph[m].items()):
            if dep not in table[m]:
                problems.append(f"{where[0]}: {m} includes {dep}, which the layering does not "
                                f"allow ({m}: {' '.join(sorted(table[m])) or 'nothing'})")
        for dep in sorted(table[m] - set(graph[m])):
            problems.append(f"the layering table lets {m} include {dep}, but no file of {m} does")
    for p in problems:
        print(f"layering: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
