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
# px (its pixels' count by "#rrggbb" color), decoded by pngcheck.py.
png_py() {
    "$PY" -c "
import sys
sys.path.insert(0, '$SRCDIR/tests/e2e')
from pngcheck import pixels
w, h, px = pixels(sys.argv[1])
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
