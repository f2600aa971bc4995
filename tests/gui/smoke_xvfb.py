#!/usr/bin/env python3
"""Smoke test of the real tilepath-gui binary on a real X server (Xvfb through xvfb-run).

Starts `tilepath-gui --open <copy of data/h200-sweep.sqlite> --tour DIR` on the xcb platform:
the window is shown, every tab made current in turn and grabbed from the X server's screen.
Each PNG must exist, have the window's size and not be blank (many colours, no single colour
covering almost all of it). Exits 77 (a ctest skip) with a message when xvfb-run or Xvfb is
missing. Usage: smoke_xvfb.py TILEPATH_GUI SOURCE_DIR
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

VIEWS = ["backends", "graph", "timeline", "charts", "breakeven", "dispatch", "gate", "runs", "run"]


def skip(why):
    print(f"gui smoke test SKIPPED: {why}")
    sys.exit(77)


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace != 0:
        raise ValueError(f"{path}: depth {depth}, colour type {colour}, interlace {interlace} not read here")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        previous = line
    return width, height, rows, bpp


def blank_reason(path):
    """(why the tab's area of the screenshot is blank or None, a digest of that area).

    The area is the right part of the window, inside the tab (the editor dock is on the left):
    a view that paints nothing is caught even though the dock and menus show."""
    width, height, rows, bpp = read_png(path)
    if width < 640 or height < 400:
        return f"{width}x{height}, smaller than the window", None
    counts = {}
    samples = 0
    area = []
    for y in range(height // 10, 9 * height // 10, 4):
        row = rows[y]
        area.append(bytes(row[(width * 45 // 100) * bpp:]))
        for x in range(width * 45 // 100, width, 4):
            key = bytes(row[x * bpp:x * bpp + 3])
            counts[key] = counts.get(key, 0) + 1
            samples += 1
    commonest = max(counts.values())
    digest = hash(b"".join(area))
    if len(counts) < 8:
        return f"only {len(counts)} colours in the tab's area", digest
    if commonest > 0.97 * samples:
        return f"one colour covers {100 * commonest / samples:.1f}% of the tab's area", digest
    return None, digest


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gui, source = sys.argv[1], sys.argv[2]
    for tool in ("xvfb-run", "Xvfb"):
        if shutil.which(tool) is None:
            skip(f"{tool} not found (app/setup.sh installs xvfb with the GUI packages)")
    if not os.access(gui, os.X_OK):
        skip(f"no {gui} (build tilepath-gui first)")
    with tempfile.TemporaryDirectory(prefix="tilepath-gui-smoke-") as work:
        # A copy: the tour only reads, but the bundled file is not the test's to risk.
        db = os.path.join(work, "h200-sweep.sqlite")
        shutil.copyfile(os.path.join(source, "data", "h200-sweep.sqlite"), db)
        shots = os.path.join(work, "shots")
        env = dict(os.environ)
        env["QT_QPA_PLATFORM"] = "xcb"
        env["HOME"] = work  # settings and the app data folder of a fresh user
        env["XDG_CONFIG_HOME"] = os.path.join(work, "config")
        env["XDG_DATA_HOME"] = os.path.join(work, "data")
        env["XDG_RUNTIME_DIR"] = work
        command = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", gui, "--open", db, "--tour", shots]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            print("FAIL: tilepath-gui --tour did not finish within 120 s", file=sys.stderr)
            return 1
        sys.stdout.write(done.stdout)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            print(f"FAIL: tilepath-gui --tour exited {done.returncode}", file=sys.stderr)
            return 1
        failures = []
        seen = {}
        for view in VIEWS:
            path = os.path.join(shots, view + ".png")
            if not os.path.isfile(path):
                failures.append(f"{view}: no screenshot")
                continue
            why, digest = blank_reason(path)
            if why is not None:
                failures.append(f"{view}: blank ({why})")
            elif digest in seen:
                # The same pixels as another tab: the tab did not change on the screen.
                failures.append(f"{view}: the same picture as {seen[digest]}")
            else:
                seen[digest] = view
                print(f"{view}: ok")
        if failures:
            for f in failures:
                print("FAIL: " + f, file=sys.stderr)
            keep = os.environ.get("TILEPATH_SMOKE_KEEP")
            if keep:
                shutil.copytree(shots, keep, dirs_exist_ok=True)
            return 1
    print(f"gui smoke test: {len(VIEWS)} views grabbed from Xvfb, none blank")
    return 0


if __name__ == "__main__":
    sys.exit(main())
