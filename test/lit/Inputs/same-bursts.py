#!/usr/bin/env python3
"""same-bursts.py TSP_EMU OUT DIR TENSOR [OPTION...]: runs TSP_EMU DIR
OPTION... with --bursts off (one event a stream element) and on, each
writing OUT.{off,on}.yaml (--report), .json (--trace) and every device's
copy of TENSOR (--dump TENSOR@all=OUT.{off,on}.npy), and exits 1 unless stdout,
stderr, the exit status, the report, the trace and the dumps are the same
bytes.  Prints the run's stdout and the exit status they share."""
import filecmp
import glob
import os
import subprocess
import sys

emu, out, run_dir, tensor = sys.argv[1:5]
runs = {}
for mode in ("off", "on"):
    runs[mode] = subprocess.run([emu, run_dir, "--bursts", mode, "--report", f"{out}.{mode}.yaml",
                                 "--trace", f"{out}.{mode}.json", "--dump", f"{tensor}@all={out}.{mode}.npy",
                                 "--max-listed", "100000"] + sys.argv[5:], capture_output=True)
off, on = runs["off"], runs["on"]
for what, a, b in (("stdout", off.stdout, on.stdout),
                   ("stderr", off.stderr.replace(b".off.", b"."), on.stderr.replace(b".on.", b".")),
                   ("exit status", off.returncode, on.returncode)):
    if a != b:
        sys.exit(f"{run_dir} {' '.join(sys.argv[5:])}: --bursts off and on: the {what} differs")
for ext in ("yaml", "json"):
    if not filecmp.cmp(f"{out}.off.{ext}", f"{out}.on.{ext}", shallow=False):
        sys.exit(f"{run_dir}: {out}.off.{ext} and {out}.on.{ext} differ")
dumps = sorted(glob.glob(f"{out}.off.dev*.npy"))
for f in dumps:
    if not filecmp.cmp(f, f.replace(".off.", ".on."), shallow=False):
        sys.exit(f"{run_dir}: {f} differs from its --bursts on twin")
sys.stdout.write(on.stdout.decode())
print(f"exit {on.returncode}: the same bytes with --bursts off and on ({len(dumps)} dumps)")
