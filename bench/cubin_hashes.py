#!/usr/bin/env python3
"""The SHA-256 of each cubin embedded in CUDA objects or a plugin, as the cuda backend stores it
with every case (backends/cuda/embedded_cubins.h: the sm ELF images of the .nv_fatbin section,
each cut to its ELF extent), without a GPU or cuobjdump: whether a kernel change left the
bundled database's cubins as they are.

Usage: python3 bench/cubin_hashes.py [--db DATABASE] FILE...
  FILE      a .cu.o of build/backends/cuda/CMakeFiles/tilepath_cuda_host.dir/kernels/ or the plugin
  --db      also say, per cubin, how many cases of DATABASE carry its hash, and list the
            database's hashes that none of the files has
Needs objcopy (binutils). Built with --compress-mode=none, as the project builds, the
payloads are the cubins themselves.
"""
import argparse
import collections
import hashlib
import os
import sqlite3
import struct
import subprocess
import tempfile

SHT_NOBITS = 8


def elf_extent(data, at):
    """Bytes the ELF image at `at` occupies: its headers and every section that has bytes."""
    phoff, shoff = struct.unpack_from("<QQ", data, at + 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, at + 0x36)
    end = max(64, shoff + shentsize * shnum, phoff + phentsize * phnum)
    for i in range(shnum):
        header = at + shoff + i * shentsize
        (kind,) = struct.unpack_from("<I", data, header + 4)
        offset, size = struct.unpack_from("<QQ", data, header + 0x18)
        if kind != SHT_NOBITS:
            end = max(end, offset + size)
    return end


def cubin_hashes(path):
    with tempfile.TemporaryDirectory() as tmp:
        section, scratch = os.path.join(tmp, "nv_fatbin"), os.path.join(tmp, "copy")
        subprocess.run(["objcopy", f"--dump-section=.nv_fatbin={section}", path, scratch], check=True)
        data = open(section, "rb").read()
    hashes, at = [], data.find(b"\x7fELF")
    while at >= 0:
        end = at + elf_extent(data, at)
        hashes.append(hashlib.sha256(data[at:end]).hexdigest())
        at = data.find(b"\x7fELF", end)
    return hashes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    cases = collections.Counter()
    if args.db:
        with sqlite3.connect(f"file:{args.db}?mode=ro", uri=True) as db:
            cases.update(dict(db.execute("SELECT cubin_sha256, count(*) FROM cases WHERE cubin_sha256 != '' GROUP BY 1")))
    seen = set()
    for path in args.files:
        for digest in cubin_hashes(path):
            seen.add(digest)
            where = f"  {cases[digest]} cases" if args.db else ""
            print(f"{digest}  {os.path.basename(path)}{where}")
    if args.db:
        for digest, count in sorted(cases.items()):
            if digest not in seen:
                print(f"{digest}  in none of the files  {count} cases")


if __name__ == "__main__":
    main()
