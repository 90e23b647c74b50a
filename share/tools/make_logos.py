"""Draws the xsot kernel logos (share/jupyter/kernels/xsot/logo-{32x32,64x64}.png) with the standard library only.

The motif: three graph nodes joined by edges (a captured graph) on a dark rounded square. Run with any Python 3:
    python3 share/tools/make_logos.py
"""

import math
import struct
import zlib
from pathlib import Path

BG = (32, 44, 64)
EDGE = (120, 170, 230)
NODE = (250, 160, 40)
NODES = [(0.30, 0.30), (0.72, 0.42), (0.38, 0.74)]
EDGES = [(0, 1), (0, 2), (1, 2)]


def _inside_rounded_square(x, y, r=0.2):
    cx = min(max(x, r), 1 - r)
    cy = min(max(y, r), 1 - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def _segment_distance(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - (ax + t * dx), py - (ay + t * dy))


def _colour_at(x, y):
    if not _inside_rounded_square(x, y):
        return None
    for cx, cy in NODES:
        if math.hypot(x - cx, y - cy) <= 0.12:
            return NODE
    for a, b in EDGES:
        if _segment_distance(x, y, *NODES[a], *NODES[b]) <= 0.035:
            return EDGE
    return BG


def render(size, samples=4):
    rows = []
    for j in range(size):
        row = bytearray([0])  # filter type 0
        for i in range(size):
            acc = [0, 0, 0, 0]
            for sj in range(samples):
                for si in range(samples):
                    c = _colour_at((i + (si + 0.5) / samples) / size, (j + (sj + 0.5) / samples) / size)
                    if c is not None:
                        acc[0] += c[0]
                        acc[1] += c[1]
                        acc[2] += c[2]
                        acc[3] += 255
            n = samples * samples
            covered = acc[3] // 255
            if covered:
                row += bytes([acc[0] // covered, acc[1] // covered, acc[2] // covered, acc[3] // n])
            else:
                row += bytes([0, 0, 0, 0])
        rows.append(bytes(row))
    return b"".join(rows)


def png(size):
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(render(size), 9)) + chunk(
        b"IEND", b"")


def svg():
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 1 1">',
             '<rect width="1" height="1" rx="0.2" fill="rgb%s"/>' % (BG,)]
    for a, b in EDGES:
        (x1, y1), (x2, y2) = NODES[a], NODES[b]
        parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="rgb{EDGE}" stroke-width="0.07"/>')
    for x, y in NODES:
        parts.append(f'<circle cx="{x}" cy="{y}" r="0.12" fill="rgb{NODE}"/>')
    parts.append("</svg>\n")
    return "".join(parts)


if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "jupyter" / "kernels" / "xsot"
    out.mkdir(parents=True, exist_ok=True)
    for size in (32, 64):
        (out / f"logo-{size}x{size}.png").write_bytes(png(size))
    (out / "logo-svg.svg").write_text(svg())
