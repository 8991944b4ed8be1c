#!/usr/bin/env bash
# sweep report renders: rsvg-convert (librsvg, scripts/deps.sh) turns the
# picture into a PNG of its size in which every color the legend names is
# painted, and the SVG says what a reader must find at a glance: the legend
# names every color on the lanes, each metric has a learning-curve chart
# with one curve per trial that reported it, pruned curves end in a mark,
# the steered trials carry their pause and cancel marks, and no number has
# more than 4 significant digits. The sweep: tests/e2e/sweep-report-scenario.sh.
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/e2e/sweep-report-scenario.sh"

# png_py FILE CODE: runs the Python CODE with w, h (the PNG's size) and
# px (a set of its pixels' "#rrggbb" colors), decoded here (no PIL).
png_py() {
    "$PY" -c "
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, ctype, _, _, lace = struct.unpack('>IIBBBBB', body)
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and lace == 0, (depth, ctype, lace)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
rows, prev = [], bytearray(stride)
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
px = {}
for line in rows:
    for i in range(0, stride, bpp):
        k = '#%02x%02x%02x' % tuple(line[i:i + 3])
        px[k] = px.get(k, 0) + 1
$2
" "$1"
}

test_expect_success 'a sweep with done, pruned, cancelled and paused trials' '
    report_sweep &&
    "$SPOTRUN" sweep report rs -o rs.svg &&
    xmllint --noout rs.svg
'

test_expect_success 'rsvg-convert renders it to a PNG of its size' '
    rsvg-convert -o rs.png rs.svg 2>render.err &&
    test ! -s render.err &&
    size=$(svg_py rs.svg "print(root.get(\"width\"), root.get(\"height\"))") &&
    png_py rs.png "
print(w, h)
assert \"%d %d\" % (w, h) == \"$size\", (w, h, \"$size\")
assert h > 900, h # the lanes, the progress, two charts of curves
"
'

test_expect_success 'the PNG paints every color of the legend (lanes and curves)' '
    colors=$(svg_py rs.svg "
print(\" \".join(sorted({e.get(\"fill\") for e in root.iter()
                      if \"legend-swatch\" in cls(e) and e.tag == S + \"rect\"
                      and e.get(\"fill-opacity\") is None})))") &&
    echo "$colors" &&
    png_py rs.png "
want = \"$colors\".split()
assert len(want) >= 4, want
for c in want:
    print(c, px.get(c, 0))
    assert px.get(c, 0) >= 150, (c, \"painted in\", px.get(c, 0), \"pixels only\")
"
'

test_expect_success 'what a reader must find, from the SVG: legend, curves, marks, short numbers' '
    svg_py rs.svg "
# every color on the lanes is in the legend
lanes = colors(within(root, \"trial\") + within(root, \"steering\"))
legend = colors(within(root, \"legend\"))
assert lanes <= legend, lanes - legend
# each metric a chart, one curve per trial that reported it
charts = {e.get(\"data-metric\"): e for e in root.iter() if \"curves\" in cls(e)}
assert sorted(charts) == [\"acc\", \"loss\"], sorted(charts)
for g in charts.values():
    assert sorted(e.get(\"data-trial\") for e in g.iter(S + \"path\") if \"curve\" in cls(e)) == list(\"012345\")
    assert sorted(e.get(\"data-trial\") for e in g.iter(S + \"path\") if \"pruned-mark\" in cls(e)) == [\"1\", \"3\"]
# the steered trials carry their marks
lane = {e.get(\"data-trial\"): e for e in root.iter() if \"trial\" in cls(e)}
assert [e for e in lane[\"4\"].iter() if \"steer-cancel\" in cls(e)]
assert [e for e in lane[\"5\"].iter() if \"steer-pause\" in cls(e)]
# no number with more than 4 significant digits
NUM = re.compile(r\"(?<![\w.:])[-+]?(\d+\.\d+|\d+(?:\.\d*)?[eE][-+]?\d+)(?![\w.:])\")
long = [n.group(0) for t in texts(root) for n in NUM.finditer(t)
        if len(n.group(0).lstrip(\"+-\").split(\"e\")[0].replace(\".\", \"\").lstrip(\"0\")) > 4]
assert not long, long
"
'

test_done
