"""pngcheck.py FILE W H - checks a PNG (no PIL here): W x H pixels, at least
8 colours and 2% of it not white; prints its size, colours and ink. Exits 1
with the reason otherwise.

As a module: pixels(FILE) is (w, h, px), px counting the pixels of each
"#rrggbb" colour. 8-bit RGB or RGBA, not interlaced, decoded with zlib and
the five filters.
"""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and lace == 0, (depth, ctype, lace)
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, px = bytearray(stride), {}
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            k = "#%02x%02x%02x" % tuple(line[x : x + 3])
            px[k] = px.get(k, 0) + 1
        prev = line
    return w, h, px


def main():
    w, h, px = pixels(sys.argv[1])
    want = int(sys.argv[2]), int(sys.argv[3])
    assert (w, h) == want, ((w, h), want)
    ink = w * h - px.get("#ffffff", 0)
    assert len(px) >= 8 and ink > 0.02 * w * h, (len(px), ink)
    print("%dx%d, %d colours, %.1f%% not white" % (w, h, len(px), 100.0 * ink / (w * h)))


if __name__ == "__main__":
    main()
