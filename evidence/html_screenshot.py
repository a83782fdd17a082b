#!/usr/bin/env python3
"""Render the HTML report of examples/diverge and photograph it offline in headless Chromium.

Writes ``evidence/diverge_report.html`` (the report of ``examples/diverge/metrics.jsonl``,
``trainproof.render.html.write_html``) and ``evidence/diverge_report.png`` (Chromium's
screenshot of that file, opened as ``file://`` with background networking off and every
host name unresolvable, so the page can only show what it carries inline). Then it reads
the PNG back with the standard library and prints its size and how much of it is not
background, as a check that the page is not blank. Usage (from the repository root)::

    .venv/bin/python evidence/html_screenshot.py [--chromium /usr/bin/chromium]

``chromium_screenshot`` and ``png_stats`` are also used by ``tests/render/test_html.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from itertools import accumulate
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
EXAMPLE = "examples/diverge/metrics.jsonl"


def chromium_screenshot(
    html_path: Path,
    png_path: Path,
    chromium: str = CHROMIUM,
    size: tuple[int, int] = (1280, 2000),
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """Screenshot ``html_path`` in headless Chromium, offline, into ``png_path``."""
    html_path = Path(html_path).resolve()
    png_path = Path(png_path).resolve()
    with tempfile.TemporaryDirectory(prefix="tp-chromium-") as profile:
        cmd = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            # no name resolves: a page that tried to fetch anything would get nothing
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={png_path}",
            html_path.as_uri(),
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _read_png(path: Path) -> tuple[int, int, int, list[bytes]]:
    """``(width, height, bytes per pixel, rows)`` of an 8-bit, non-interlaced RGB/RGBA/grey PNG."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if hdr is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, ctype, _, _, interlace = hdr
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or bpp is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}")
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    if len(raw) < height * (stride + 1):
        raise ValueError("PNG data is short")
    m7 = int.from_bytes(b"\x7f" * stride, "big")
    m8 = int.from_bytes(b"\x80" * stride, "big")

    def add(a: bytes, b: bytes) -> bytes:  # bytewise (a + b) mod 256, without a loop
        x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
        return (((x & m7) + (y & m7)) ^ ((x ^ y) & m8)).to_bytes(stride, "big")

    rows, prev = [], bytes(stride)
    for r in range(height):
        start = r * (stride + 1)
        ft, line = raw[start], raw[start + 1 : start + 1 + stride]
        if ft == 0:
            cur = line
        elif ft == 1:
            buf = bytearray(line)
            for c in range(bpp):
                buf[c::bpp] = bytes(accumulate(buf[c::bpp], lambda a, b: (a + b) & 255))
            cur = bytes(buf)
        elif ft == 2:
            cur = add(line, prev)
        elif ft in (3, 4):
            buf = bytearray(line)
            for i in range(stride):
                left = buf[i - bpp] if i >= bpp else 0
                up = prev[i]
                if ft == 3:
                    buf[i] = (buf[i] + ((left + up) >> 1)) & 255
                else:
                    ul = prev[i - bpp] if i >= bpp else 0
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                    buf[i] = (buf[i] + pred) & 255
            cur = bytes(buf)
        else:
            raise ValueError(f"bad PNG filter type {ft}")
        rows.append(cur)
        prev = cur
    return width, height, bpp, rows


def png_stats(path: Path, sample: int = 2) -> dict:
    """Width, height, the background colour (the commonest), the share of pixels that are
    not background, the number of distinct colours, and the share of strongly red pixels
    (the FAIL colour), over every ``sample``-th pixel of every ``sample``-th row."""
    width, height, bpp, rows = _read_png(path)
    colours: Counter = Counter()
    for row in rows[::sample]:
        for i in range(0, len(row), bpp * sample):
            px = row[i : i + bpp]
            colours[px[:3] if bpp >= 3 else px[:1] * 3] += 1
    total = sum(colours.values())
    background, bg_n = colours.most_common(1)[0]
    red = sum(n for c, n in colours.items() if c[0] > 150 and c[1] < 90 and c[2] < 90)
    return {
        "width": width,
        "height": height,
        "background": tuple(background),
        "not_background": 1 - bg_n / total,
        "colours": len(colours),
        "red": red / total,
    }


def report_page() -> str:
    """The text of ``evidence/diverge_report.html``: the HTML report of :data:`EXAMPLE`,
    judged from the current folder (the repository root: the report shows the path as
    given)."""
    sys.path.insert(0, str(REPO / "src"))
    from trainproof import judge
    from trainproof.render.html import render_html

    return render_html([judge(EXAMPLE)], title="trainproof report: examples/diverge")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default=CHROMIUM)
    args = ap.parse_args(argv)
    os.chdir(REPO)  # the report shows the path as given: keep it relative and stable
    html_path = REPO / "evidence" / "diverge_report.html"
    png_path = REPO / "evidence" / "diverge_report.png"
    html_path.write_text(report_page(), encoding="utf-8")
    print(f"wrote {html_path.relative_to(REPO)} ({html_path.stat().st_size} bytes)")
    if not shutil.which(args.chromium):
        print(f"no Chromium at {args.chromium}: screenshot skipped", file=sys.stderr)
        return 2
    proc = chromium_screenshot(html_path, png_path, args.chromium)
    if proc.returncode != 0 or not png_path.exists():
        print(proc.stdout, proc.stderr, sep="\n", file=sys.stderr)
        return 1
    st = png_stats(png_path)
    print(
        f"wrote {png_path.relative_to(REPO)} ({png_path.stat().st_size} bytes, {st['width']}x{st['height']}, "
        f"{st['not_background']:.1%} not background, {st['colours']} colours, {st['red']:.2%} FAIL red)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
