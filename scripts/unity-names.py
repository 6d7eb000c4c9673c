#!/usr/bin/env python3
"""Lists the file-local names that two source files of one build target both define.

The unity build (INFERBENCH_UNITY_BUILD, CMakeLists.txt) compiles a target's files together as
one translation unit, so two files' helpers in anonymous namespaces meet there: with the same
signature they fail to compile, with different ones they silently become overloads of each
other, and a call may pick the other file's. This check names both, so that one is renamed or
the helper moves to a header. A target is a src/ module's library, its tests, or the end-to-end
tests (tests/e2e with tests/support). Run by ctest (Build.UnityNamesAreUnique); exit 1 on a clash.

Usage: unity-names.py [REPO_ROOT]
"""
import collections
import pathlib
import re
import sys

DEF = re.compile(
    r"^(?:template\s*<[^>]*>\s*)?(?:static |inline |constexpr |const |consteval )*"
    r"[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]+([A-Za-z_]\w*)\s*(\(|=|\{|;|\[)")
TYPE = re.compile(r"^(?:struct|class|enum class|enum|union) ([A-Za-z_]\w*)\b(?!;)")
ALIAS = re.compile(r"^using ([A-Za-z_]\w*) =")
# Deliberate overload sets: each file's takes its own enum or options struct, which no call can
# mistake for another's.
OVERLOADS = {"to_string", "run", "validate"}
SKIP = ("TEST", "return", "namespace", "}", "#", " ", "\t", "//", "INSTANTIATE", "extern")
NAMESPACE = re.compile(r"^namespace ([\w:]+) \{")


def names_in(path):
    """{(namespace, name): [line, ...]}: names defined at the top level of a file's namespaces."""
    out = collections.defaultdict(list)
    ns = ""
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        m = NAMESPACE.match(line)
        if m:
            ns = m.group(1)
            continue
        if line.startswith(SKIP) or not line.strip():
            continue
        for rx in (TYPE, ALIAS, DEF):
            m = rx.match(line)
            if m:
                name = m.group(1)
                # Member definitions (Class::f) and operators are not file-local names.
                if "::" + name in line or name in ("operator", "main"):
                    break
                out[(ns, name)].append(n)
                break
    return out


def targets(root):
    src = root / "src"
    for module in sorted(p for p in src.iterdir() if p.is_dir()):
        files = sorted(module.glob("*.cc"))
        yield f"src/{module.name}", [f for f in files if not f.name.endswith("_test.cc")]
        yield f"src/{module.name} tests", [f for f in files if f.name.endswith("_test.cc")]
    yield "tests/e2e", sorted((root / "tests" / "e2e").glob("*.cc")) + sorted(
        (root / "tests" / "support").glob("*.cc"))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    clashes = 0
    for target, files in targets(root):
        where = collections.defaultdict(list)
        for f in files:
            for key, lines in names_in(f).items():
                where[key].append(f"{f.relative_to(root)}:{lines[0]}")
        for (_, name), places in sorted(where.items()):
            if len(places) > 1 and name not in OVERLOADS:
                clashes += 1
                print(f"{target}: '{name}' is defined in {len(places)} files: {', '.join(places)}")
    if clashes:
        print(f"unity-names: {clashes} names clash; rename one or move the helper to a header")
        return 1
    print("unity-names: no file-local name is defined twice in one target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
