#!/usr/bin/env python3
"""Lists the longest functions of the production code (src/, tests excluded) by line count.

Uses Universal Ctags' end lines. Usage: scripts/function-lengths.py [--top N] [--max LINES]
With --max, exits 1 when a function is longer (the list names them)."""
import argparse
import json
import re
import pathlib
import shutil
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent


def lengths():
    files = [str(p.relative_to(root)) for p in sorted((root / "src").rglob("*.cc"))
             if not p.name.endswith("_test.cc")]
    ctags = shutil.which("ctags-universal") or shutil.which("ctags")
    if ctags is None:
        sys.exit("function-lengths: Universal Ctags is needed (scripts/install-deps.sh installs it)")
    out = subprocess.run([ctags, "--output-format=json", "--fields=+ne", "--c++-kinds=f",
                          "-o", "-", *files], cwd=root, capture_output=True, text=True, check=True)
    rows = []
    for line in out.stdout.splitlines():
        t = json.loads(line)
        if t.get("_type") != "tag" or "end" not in t or t["name"].startswith("__anon"):
            continue
        name = re.sub(r"__anon[0-9a-f]+", "(anon)", (t["scope"] + "::" if t.get("scope") else "") + t["name"])
        rows.append((t["end"] - t["line"] + 1, f'{t["path"]}:{t["line"]}', name))
    rows.sort(reverse=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--max", type=int, default=0)
    a = ap.parse_args()
    rows = lengths()
    shown = [r for r in rows if r[0] > a.max] if a.max else rows[: a.top]
    for n, where, name in shown:
        print(f"{n:5d}  {name}  ({where})")
    return 1 if a.max and shown else 0


if __name__ == "__main__":
    sys.exit(main())
