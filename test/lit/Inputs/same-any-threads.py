#!/usr/bin/env python3
"""same-any-threads.py TSP_EMU OUT DIR [OPTION...]: runs TSP_EMU DIR OPTION...
with --threads 1, 2 and 3, each writing OUT.N.yaml (--report) and OUT.N.json
(--trace), and exits 1 unless the three runs' stdout, stderr, exit status,
report and trace are the same bytes.  Prints run 1's stdout, then the exit
status they share."""
import filecmp
import subprocess
import sys

emu, out, run_dir = sys.argv[1:4]
runs = []
for n in (1, 2, 3):
    p = subprocess.run([emu, run_dir, "--threads", str(n), "--report", f"{out}.{n}.yaml",
                        "--trace", f"{out}.{n}.json"] + sys.argv[4:], capture_output=True)
    runs.append(p)
for n in (2, 3):
    for what, a, b in (("stdout", runs[0].stdout, runs[n - 1].stdout), ("stderr", runs[0].stderr, runs[n - 1].stderr),
                       ("exit status", runs[0].returncode, runs[n - 1].returncode)):
        if a != b:
            sys.exit(f"--threads 1 and {n}: the {what} differs")
    for ext in ("yaml", "json"):
        if not filecmp.cmp(f"{out}.1.{ext}", f"{out}.{n}.{ext}", shallow=False):
            sys.exit(f"--threads 1 and {n}: {out}.1.{ext} and {out}.{n}.{ext} differ")
sys.stdout.write(runs[0].stdout.decode())
print(f"exit {runs[0].returncode}: the same bytes with --threads 1, 2 and 3")
