#!/usr/bin/env python3
"""bench/cubin_hashes.py on a host object whose .nv_fatbin holds two synthetic cubins.

Each cubin is an ELF header, its section headers and one section of bytes after them, then a
NOBITS section that has no bytes in the file, then the fatbin's padding: the hash must cover
exactly the header through the last section with bytes, as backends/cuda/embedded_cubins.cpp
cuts it. With --db, a case count per hash and the database's hashes no file has.

  python3 tests/backends/cubin_hashes.py SOURCE_DIR
"""
import hashlib
import importlib.util
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile

SHT_PROGBITS, SHT_NOBITS = 1, 8


def cubin(payload):
    """An ELF64 image: header, 3 section headers (null, PROGBITS, NOBITS), then the PROGBITS bytes."""
    shoff, shentsize, shnum = 64, 64, 3
    data_at = shoff + shentsize * shnum
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, shoff, 0, 64, 0, 0, shentsize, shnum, 0)
    sections = bytes(64)
    sections += struct.pack("<IIQQQQIIQQ", 0, SHT_PROGBITS, 0, 0, data_at, len(payload), 0, 0, 1, 0)
    sections += struct.pack("<IIQQQQIIQQ", 0, SHT_NOBITS, 0, 0, data_at + len(payload), 4096, 0, 0, 1, 0)
    return header + sections + payload


def main():
    source = sys.argv[1]
    spec = importlib.util.spec_from_file_location("cubin_hashes", os.path.join(source, "bench", "cubin_hashes.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    first, second = cubin(b"first kernel" * 3), cubin(b"second" * 7)
    blob = b"\x50\xed\x55\xba" + bytes(12) + first + bytes(40) + second + bytes(24)  # container header, padding
    with tempfile.TemporaryDirectory() as tmp:
        empty_c, obj, section = (os.path.join(tmp, n) for n in ("empty.c", "empty.o", "fatbin.bin"))
        open(empty_c, "w").write("int tilepath_empty;\n")
        subprocess.run(["cc", "-c", empty_c, "-o", obj], check=True)
        open(section, "wb").write(blob)
        subprocess.run(["objcopy", "--add-section", f".nv_fatbin={section}", obj], check=True)
        got = tool.cubin_hashes(obj)
        want = [hashlib.sha256(first).hexdigest(), hashlib.sha256(second).hexdigest()]
        assert got == want, f"hashes {got}, expected {want}"

        db = os.path.join(tmp, "cases.sqlite")
        with sqlite3.connect(db) as c:
            c.execute("CREATE TABLE cases (id INTEGER PRIMARY KEY, cubin_sha256 TEXT NOT NULL)")
            c.executemany("INSERT INTO cases (cubin_sha256) VALUES (?)", [(want[0],)] * 3 + [("f" * 64,), ("",)])
        out = subprocess.run([sys.executable, os.path.join(source, "bench", "cubin_hashes.py"), "--db", db, obj],
                             check=True, capture_output=True, text=True).stdout.splitlines()
        expected = [f"{want[0]}  empty.o  3 cases", f"{want[1]}  empty.o  0 cases",
                    f"{'f' * 64}  in none of the files  1 cases"]
        assert out == expected, "\n".join(out)
    print("ok: two cubins cut at their extents, case counts and the database's unmatched hash")


if __name__ == "__main__":
    main()
