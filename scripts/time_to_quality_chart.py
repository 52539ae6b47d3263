#!/usr/bin/env python3
"""Validation BLEU against training time, from the validations.tsv of several runs.

Each run's model directory holds validations.tsv (written by `qkv train` at every
validation): its train_seconds exclude the time spent validating, so a curve shows what
the model reaches after that much training. Writes OUT/chart.svg (self-contained SVG,
one polyline per run) and OUT/summary.txt (the best BLEU reached by fixed budgets).

    scripts/time_to_quality_chart.py --minutes 60 --out DIR NAME=validations.tsv ...

Standard library only. Used by scripts/time_to_quality.sh.

>>> rows = parse_tsv("validation\\tupdate\\ttokens_seen\\ttrain_seconds\\tvalid_seconds"
...                  "\\tcross_entropy\\tbleu\\n1\\t100\\t5\\t60.5\\t3\\t5.1\\t2.5\\n"
...                  "2\\t200\\t9\\t121\\t6\\t4.0\\t\\n", "x.tsv")
>>> [(r.minutes, r.bleu) for r in rows]
[(1.0083333333333333, 2.5), (2.0166666666666666, None)]
>>> best_by(rows, 1.5), best_by(rows, 0.5)
(2.5, None)
>>> nice_step(33.0)
5.0
>>> svg = render_svg([("a&b", rows)], 60, "t")
>>> svg.count("<polyline"), "a&amp;b" in svg, "BLEU 2.50" in svg
(1, True, True)
>>> [line.split("\\t") for line in summary([("a", rows)], 10).splitlines()[1:]]
[['run', '5 min', '10 min', 'updates'], ['a', '2.50', '2.50', '200']]
"""

import argparse
import html
import math
import sys
from dataclasses import dataclass
from pathlib import Path

COLUMNS = ["validation", "update", "tokens_seen", "train_seconds", "valid_seconds",
           "cross_entropy", "bleu"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
BUDGETS_MIN = [5, 10, 15, 20, 30, 45, 60, 90, 120]


@dataclass
class Row:
    update: int
    minutes: float
    cross_entropy: float
    bleu: float | None


def parse_tsv(text, name):
    """The rows of one validations.tsv; ValueError naming the file and line otherwise."""
    lines = text.splitlines()
    if not lines or lines[0].split("\t") != COLUMNS:
        raise ValueError(f"{name}: line 1 is not the header {chr(9).join(COLUMNS)!r}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(COLUMNS):
            raise ValueError(f"{name}:{number}: {len(fields)} fields, expected {len(COLUMNS)}")
        try:
            rows.append(Row(int(fields[1]), float(fields[3]) / 60, float(fields[5]),
                            float(fields[6]) if fields[6] else None))
        except ValueError as e:
            raise ValueError(f"{name}:{number}: {e}") from None
    return rows


def best_by(rows, minutes):
    """The best validation BLEU reached within `minutes` of training (None: no BLEU yet)."""
    seen = [r.bleu for r in rows if r.minutes <= minutes and r.bleu is not None]
    return max(seen) if seen else None


def nice_step(span):
    """A round tick step giving about 4-8 ticks over span."""
    raw = span / 8
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw:
            return float(m * power)
    return float(10 * power)


def render_svg(runs, minutes, title):
    width, height = 720, 420
    left, right, top, bottom = 60, 150, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    ymax = max([r.bleu for _, rows in runs for r in rows if r.bleu is not None] + [1.0])
    ystep = nice_step(ymax)
    ytop = math.ceil(ymax / ystep) * ystep
    xstep = nice_step(minutes)

    def x(m):
        return left + plot_w * m / minutes

    def y(b):
        return top + plot_h * (1 - b / ytop)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15">{html.escape(title)}</text>']
    tick = 0.0
    while tick <= ytop + 1e-9:
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" '
                   f'y2="{y(tick):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}</text>')
        tick += ystep
    tick = 0.0
    while tick <= minutes + 1e-9:
        out.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top + plot_h}" '
                   f'y2="{top + plot_h + 4}" stroke="#333"/>')
        out.append(f'<text x="{x(tick):.1f}" y="{top + plot_h + 18}" '
                   f'text-anchor="middle">{tick:g}</text>')
        tick += xstep
    out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" '
               'stroke="#333"/>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#333"/>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">'
               'training time, minutes (validation excluded)</text>')
    out.append(f'<text transform="translate(16 {top + plot_h / 2}) rotate(-90)" '
               'text-anchor="middle">validation BLEU</text>')
    for i, (name, rows) in enumerate(runs):
        colour = COLOURS[i % len(COLOURS)]
        points = [(r.minutes, r.bleu) for r in rows if r.bleu is not None and r.minutes <= minutes]
        if points:
            path = " ".join(f"{x(m):.1f},{y(b):.1f}" for m, b in points)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                       'stroke-width="2"/>')
            for m, b in points:
                out.append(f'<circle cx="{x(m):.1f}" cy="{y(b):.1f}" r="2.5" fill="{colour}">'
                           f'<title>{html.escape(name)}, {m:.1f} min: BLEU {b:.2f}</title>'
                           '</circle>')
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{left + plot_w + 15}" x2="{left + plot_w + 35}" y1="{ly}" '
                   f'y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + plot_w + 40}" y="{ly + 4}">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def summary(runs, minutes):
    budgets = [b for b in BUDGETS_MIN if b <= minutes] or [minutes]
    lines = ["best validation BLEU within N minutes of training (validation time excluded)",
             "run\t" + "\t".join(f"{b:g} min" for b in budgets) + "\tupdates"]
    for name, rows in runs:
        cells = []
        for b in budgets:
            v = best_by(rows, b)
            cells.append("-" if v is None else f"{v:.2f}")
        updates = max([r.update for r in rows if r.minutes <= minutes] or [0])
        lines.append(f"{name}\t" + "\t".join(cells) + f"\t{updates}")
    return "\n".join(lines) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60, help="cut every curve here")
    parser.add_argument("--out", type=Path, required=True, help="directory for the outputs")
    parser.add_argument("--title", default="Time to quality: validation BLEU by training time")
    parser.add_argument("runs", nargs="+", metavar="NAME=validations.tsv")
    args = parser.parse_args(argv)
    if not args.minutes > 0:
        parser.error(f"--minutes {args.minutes} must be > 0")
    runs = []
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            parser.error(f"{spec!r} is not NAME=validations.tsv")
        try:
            text = Path(path).read_text(encoding="utf-8")
            runs.append((name, parse_tsv(text, path)))
        except (OSError, ValueError) as e:
            parser.error(str(e))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "chart.svg").write_text(render_svg(runs, args.minutes, args.title),
                                        encoding="utf-8")
    text = summary(runs, args.minutes)
    (args.out / "summary.txt").write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
