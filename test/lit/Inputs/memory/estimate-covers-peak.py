#!/usr/bin/env python3
# estimate-covers-peak.py TSP-EMU DIR [ARGS...]: runs tsp-emu on DIR twice,
# first with --max-memory 1 to read the estimate it refuses with
# (runtime/memory.c), then for real, and compares the run's peak resident
# memory (the kernel's ru_maxrss of the child) with that estimate.  Prints
# "peak within the estimate" when it is, else both figures; exits 1 on any
# other outcome.  ARGS go to both runs.
import re
import resource
import subprocess
import sys

emu, outdir, args = sys.argv[1], sys.argv[2], sys.argv[3:]
refusal = subprocess.run([emu, outdir, '--max-memory', '1'] + args, capture_output=True, text=True)
m = re.search(r'needs an estimated (\d+) MiB', refusal.stderr)
if refusal.returncode != 1 or not m:
    sys.exit('no estimate in: ' + refusal.stderr)
estimate_mib = int(m.group(1))
run = subprocess.run([emu, outdir] + args, capture_output=True, text=True)
if run.returncode != 0 or 'data: verified' not in run.stdout:
    sys.exit('the run failed: ' + run.stdout + run.stderr)
peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
if peak_mib <= estimate_mib:
    print('peak within the estimate')
else:
    print('peak %.0f MiB over the estimate %d MiB' % (peak_mib, estimate_mib))
