#!/usr/bin/env python3
"""Compares the SASS of two builds of a plugin kernel by kernel (cuobjdump -sass output):
per function, the instruction text without addresses and encodings.

Usage: python3 bench/sass_compare.py OLD.sass NEW.sass
Prints how many kernels both builds have with identical instructions, how many of the
others differ only in constant-bank offsets (kernel parameters that moved), which differ
otherwise, and which exist in one build only.
"""
import re
import sys


def functions(path):
    out, name, body = {}, None, []
    for line in open(path, errors="replace"):
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            if name:
                out[name] = body
            name, body = m.group(1), []
            continue
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;", line)
        if name and m:
            body.append(m.group(1))
    if name:
        out[name] = body
    return out


def offsets_masked(body):
    return [re.sub(r"c\[0x[0-9a-f]+\]\[0x[0-9a-f]+\]", "c[.][.]", line) for line in body]


def main(old_path, new_path):
    old, new = functions(old_path), functions(new_path)
    same = [n for n in old if n in new and old[n] == new[n]]
    moved = [n for n in old if n in new and old[n] != new[n] and offsets_masked(old[n]) == offsets_masked(new[n])]
    differ = [n for n in old if n in new and offsets_masked(old[n]) != offsets_masked(new[n])]
    print(f"kernels in both: {len(same) + len(moved) + len(differ)}; identical instructions: {len(same)}; "
          f"identical but for constant-bank offsets: {len(moved)}; differing: {len(differ)}")
    print(f"only in {old_path}: {len([n for n in old if n not in new])}; only in {new_path}: "
          f"{len([n for n in new if n not in old])}")
    for n in differ:
        print("differs:", n)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
