#!/usr/bin/env python3
"""trace-picture.py: draws a window of a Chrome trace (tspc --emit=trace or
tsp-emu --trace) as an SVG timeline, for docs and for readers without a
trace viewer at hand.  One row a track (a unit, or a link direction's
sending or receiving side) of the devices asked for, one box a slice,
coloured by kind: compute units, chip-to-chip units, links sending and
links receiving.  Reads only the trace; plain SVG out, no dependency.

  scripts/trace-picture.py TRACE.json OUT.svg [--devices 0,1] [--from US] [--to US]

--devices lists the processes (device ids) to draw (default: the first
two); --from/--to the window in the trace's microseconds (default: the
whole span of those devices' slices).
"""
import argparse
import json
import sys

ROW = 16          # pixels a track
LABEL = 190       # pixels for the track names
WIDTH = 1000      # pixels for the time axis
COLOURS = {"vxm": "#4e79a7", "mxm": "#e15759", "sxm": "#76b7b2", "ctl": "#bab0ac",
           "c2c": "#f28e2b", "send": "#59a14f", "recv": "#edc948"}
LEGEND = {"vxm": "vector unit", "mxm": "matrix unit", "sxm": "switch unit", "ctl": "control",
          "c2c": "C2C (SEND/RECV)", "send": "link, sending", "recv": "link, taken"}


def kind(track):
    if track.startswith("port") and "->" in track:
        return "send"
    if track.startswith("port"):
        return "recv"
    return track.split(".")[0] if track.split(".")[0] in COLOURS else "ctl"


def load(path):
    try:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"trace-picture.py: error: {path}: not a Chrome trace ({e})")
    names, slices = {}, []
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "X":
            slices.append(e)
    return names, slices


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def main():
    ap = argparse.ArgumentParser(description="draw a window of a Chrome trace as an SVG timeline")
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--devices", default="0,1")
    ap.add_argument("--from", dest="start", type=float)
    ap.add_argument("--to", dest="end", type=float)
    a = ap.parse_args()
    devices = [int(d) for d in a.devices.split(",")]
    names, slices = load(a.trace)
    mine = [s for s in slices if s["pid"] in devices]
    if not mine:
        sys.exit(f"trace-picture.py: error: {a.trace}: no slices on devices {a.devices}")
    start = a.start if a.start is not None else min(s["ts"] for s in mine)
    end = a.end if a.end is not None else max(s["ts"] + s["dur"] for s in mine)
    if end <= start:
        sys.exit("trace-picture.py: error: the window is empty (--to must be after --from)")
    tracks = sorted({(s["pid"], s["tid"]) for s in mine})
    row = {t: i for i, t in enumerate(tracks)}
    scale = WIDTH / (end - start)
    height = ROW * len(tracks) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL + WIDTH + 10}" height="{height}" '
           f'font-family="monospace" font-size="10">',
           f'<rect width="100%" height="100%" fill="white"/>']
    for (pid, tid), i in row.items():
        name = names.get((pid, tid), str(tid))
        y = 20 + i * ROW
        out.append(f'<text x="4" y="{y + 11}">dev{pid:04d} {escape(name)}</text>')
        out.append(f'<line x1="{LABEL}" y1="{y + ROW}" x2="{LABEL + WIDTH}" y2="{y + ROW}" stroke="#eee"/>')
    for s in mine:
        x0, x1 = max(s["ts"], start), min(s["ts"] + s["dur"], end)
        if x1 < x0:
            continue
        y = 20 + row[(s["pid"], s["tid"])] * ROW
        w = max((x1 - x0) * scale, 0.5)
        colour = COLOURS[kind(names.get((s["pid"], s["tid"]), ""))]
        out.append(f'<rect x="{LABEL + (x0 - start) * scale:.2f}" y="{y + 2}" width="{w:.2f}" height="{ROW - 4}" '
                   f'fill="{colour}"><title>{escape(s["name"])}</title></rect>')
    axis = 20 + len(tracks) * ROW + 12
    for k in range(6):
        t = start + (end - start) * k / 5
        out.append(f'<text x="{LABEL + WIDTH * k / 5:.1f}" y="{axis}" text-anchor="middle">{t:.3f} us</text>')
    for k, (what, colour) in enumerate(COLOURS.items()):  # the legend
        x = LABEL + k * 110
        out.append(f'<rect x="{x}" y="{axis + 10}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="{axis + 19}">{LEGEND[what]}</text>')
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"{a.out}: {len(mine)} slices on {len(tracks)} tracks of devices {a.devices}, {start:.3f} to {end:.3f} us")


if __name__ == "__main__":
    main()
