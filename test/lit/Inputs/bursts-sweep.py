#!/usr/bin/env python3
"""bursts-sweep.py TSP_AS TSP_EMU DIR N: N random programs (random-programs.py,
seeds 1..N, rings of 2 to 6 devices), each run by same-bursts.py plainly,
with jitter, with drift and start skew, and on 2 threads.  Exits 1 on the
first difference; else prints how many elements ran in bursts in all
(TSP_EMU_WINDOWS), so a sweep that never bursts shows."""
import os
import re
import subprocess
import sys

tsp_as, emu, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
here = os.path.dirname(os.path.abspath(__file__))
burst_elements = runs = 0
for seed in range(1, n + 1):
    devices = 2 + seed % 5
    base = os.path.join(out, "p%d" % seed)
    subprocess.run([sys.executable, os.path.join(here, "random-programs.py"), str(seed), str(devices), base + ".tsa"],
                   check=True)
    with open(base + ".yaml", "w") as f:
        f.write("topology: ring\ndevices: %d\n" % devices)
    subprocess.run([tsp_as, base + ".tsa", "-t", base + ".yaml", "-o", base], check=True, capture_output=True)
    for opts in ([], ["--jitter", "on", "--seed", str(seed)], ["--drift-ppm", "300", "--start-skew", "50", "--seed", str(seed)],
                 ["--threads", "2"]):
        p = subprocess.run([sys.executable, os.path.join(here, "same-bursts.py"), emu, base + ".r", base, "sram"] + opts,
                           capture_output=True, text=True)
        if p.returncode:
            sys.exit("seed %d %s: %s%s" % (seed, " ".join(opts), p.stdout, p.stderr))
        runs += 1
    w = subprocess.run([emu, base], env=dict(os.environ, TSP_EMU_WINDOWS="1"), capture_output=True, text=True)
    burst_elements += int(re.search(r"(\d+) of them elements run in bursts", w.stderr).group(1))
print("%d random programs, %d runs: the same bytes with --bursts off and on; %d elements ran in bursts"
      % (n, runs, burst_elements))
