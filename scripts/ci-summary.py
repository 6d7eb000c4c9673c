#!/usr/bin/env python3
"""Prints where a CI run's time went: seconds per stage (from the file scripts/lib/stage.sh
appends to) and the slowest tests of every ctest pass (from ctest's JUnit files), so that a change
that blows the test-time budget (docs/testing.md) shows in the log that lands with it.

Usage: ci-summary.py STAGE_FILE [--slowest N] [--cases PASS=DIR]... [PASS=JUNIT.xml ...]
       (--cases: the GoogleTest XML files of the executables a pass ran whole, counted by case)
       ci-summary.py --costs JUNIT.xml > tests/ctest-costs.txt   (the seed of scripts/ctest.sh)
"""
import argparse
import glob
import os
import sys
import xml.etree.ElementTree as ET


def read_stages(path):
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3:
                    print(f"ci-summary: {path}:{n}: not NAME<TAB>SECONDS<TAB>STATUS", file=sys.stderr)
                    continue
                try:
                    rows.append((parts[0], float(parts[1]), int(parts[2])))
                except ValueError:
                    print(f"ci-summary: {path}:{n}: not NAME<TAB>SECONDS<TAB>STATUS", file=sys.stderr)
    except FileNotFoundError:
        pass
    return rows


def read_junit(label, path):
    """(tests, counts) of one ctest pass; counts: passed, failed, skipped."""
    tests, counts = [], {"passed": 0, "failed": 0, "skipped": 0}
    try:
        root = ET.parse(path).getroot()
    except (FileNotFoundError, ET.ParseError) as e:
        print(f"ci-summary: {path}: {e}", file=sys.stderr)
        return tests, None
    for case in root.iter("testcase"):
        t = float(case.get("time", "0") or 0)
        if case.find("failure") is not None or case.get("status") == "fail":
            kind = "failed"
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            kind = "skipped"
        else:
            kind = "passed"
        counts[kind] += 1
        tests.append((t, label, case.get("name", "?"), kind))
    return tests, counts


def read_cases(directory):
    """counts of the GoogleTest cases in DIR/*.xml (executables run whole), or None."""
    files = sorted(glob.glob(os.path.join(directory, "*.xml")))
    if not files:
        return None
    counts = {"executables": 0, "passed": 0, "failed": 0, "skipped": 0}
    for path in files:
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            print(f"ci-summary: {path}: {e}", file=sys.stderr)
            continue
        counts["executables"] += 1
        for case in root.iter("testcase"):
            if case.find("failure") is not None:
                counts["failed"] += 1
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    return counts


def write_costs(junit):
    tests, counts = read_junit("main", junit)
    if counts is None:
        return 2
    print("# Seconds per test (ctest's cost format: name, runs, seconds) of the tests that take a second")
    print("# or more, from a full run; scripts/ctest.sh seeds a new build folder with them so that ctest")
    print("# starts the slowest first. Regenerate: scripts/ci-summary.py --costs JUNIT.xml.")
    for secs, _, name, _ in sorted(tests, key=lambda t: -t[0]):
        if secs >= 1.0:
            print(f"{name} 1 {secs:.2f}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    if len(sys.argv) == 3 and sys.argv[1] == "--costs":
        return write_costs(sys.argv[2])
    ap.add_argument("stages")
    ap.add_argument("--slowest", type=int, default=15)
    ap.add_argument("--cases", action="append", default=[], help="LABEL=DIR")
    ap.add_argument("passes", nargs="*", help="LABEL=JUNIT.xml")
    a = ap.parse_args()

    stages = read_stages(a.stages)
    width = max([len(s[0]) for s in stages] + [24])
    print("ci: seconds per stage")
    print(f"    {'stage':<{width}} {'seconds':>8}  status")
    total = 0.0
    for name, secs, rc in stages:
        total += secs
        print(f"    {name:<{width}} {secs:>8.0f}  {'ok' if rc == 0 else f'exit {rc}'}")
    print(f"    {'total':<{width}} {total:>8.0f}  ({total / 60:.1f} min)")

    everything = []
    for spec in a.passes:
        label, _, path = spec.partition("=")
        tests, counts = read_junit(label, path)
        if counts is None:
            print(f"ci: tests ({label}): no results ({path})")
            continue
        everything += tests
        print(f"ci: tests ({label}): {len(tests)} run: {counts['passed']} passed, "
              f"{counts['failed']} failed, {counts['skipped']} skipped; "
              f"{sum(t[0] for t in tests):.0f} test-seconds")
        for cspec in a.cases:
            clabel, _, directory = cspec.partition("=")
            cases = read_cases(directory) if clabel == label else None
            if cases:
                total = cases["passed"] + cases["failed"] + cases["skipped"]
                print(f"ci: tests ({label}): of these, {cases['executables']} unit-test executables "
                      f"run whole: {total} GoogleTest cases, {cases['passed']} passed, "
                      f"{cases['failed']} failed, {cases['skipped']} skipped")
    if everything:
        everything.sort(key=lambda t: -t[0])
        print(f"ci: the {min(a.slowest, len(everything))} slowest tests")
        for secs, label, name, kind in everything[: a.slowest]:
            note = "" if kind == "passed" else f"  ({kind})"
            print(f"    {secs:>7.1f} s  {label:<10} {name}{note}")


if __name__ == "__main__":
    sys.exit(main())
