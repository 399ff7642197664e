#!/usr/bin/env python3
"""cycles_close.py TOLERANCE LABEL=RUN.txt LABEL=RUN.txt: reads the
deterministic cycle count of two runs (tsp-emu's "ok: N devices, C cycles
(predicted C), ...", or run.sh's "exact: ok: ..."), prints both and their
ratio, and fails unless the second is within TOLERANCE (a fraction, 0.05
= 5 %) of the first."""
import re
import sys


def exact_cycles(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"(?:exact: )?ok: \d+ devices, (\d+) cycles \(predicted (\d+)\)", line)
            if m and m.group(1) == m.group(2):
                return int(m.group(1))
    sys.exit(f"{path}: no deterministic run with emulated == predicted")


def main():
    tolerance = float(sys.argv[1])
    (label_a, path_a), (label_b, path_b) = (arg.split("=", 1) for arg in sys.argv[2:4])
    a, b = exact_cycles(path_a), exact_cycles(path_b)
    ratio = b / a
    print(f"{label_a}: {a} cycles")
    print(f"{label_b}: {b} cycles, {ratio:.3f} times")
    verdict = "within" if abs(ratio - 1) <= tolerance else "NOT within"
    print(f"{verdict} {tolerance * 100:g} %")
    return 0 if verdict == "within" else 1


if __name__ == "__main__":
    sys.exit(main())
