#!/usr/bin/env python3
"""one-pace-routes.py BINDIR WORK CASES SEED: random explicit topologies of 3
to 8 devices whose links run at 100, 50 or 25 Gb/s, and a copy between two
random devices of each.  A stream needs links of one pace (passes/route.c),
so tspc must route the copy exactly when some path joins the two devices
over links of one speed alone (found here by a search per speed), and
refuse it, saying so, exactly when none does; a routed copy must then
verify on tsp-emu.  Prints a line for any case that breaks that, then the
counts."""
import collections
import os
import random
import subprocess
import sys

bindir, work, cases, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
os.makedirs(work, exist_ok=True)
topo, model, out = (os.path.join(work, f) for f in ("t.yaml", "m.tg", "out"))


def random_links(n):
    pairs = {(rng.randrange(i), i) for i in range(1, n)}  # a spanning tree: connected
    for _ in range(rng.randint(0, n)):
        a, b = rng.sample(range(n), 2)
        pairs.add((min(a, b), max(a, b)))
    return [(a, b, rng.choice([50, 25]) if rng.random() < 0.35 else 100) for a, b in sorted(pairs)]


def joined_at_one_speed(links, src, dst):
    for speed in {g for _, _, g in links}:
        near = collections.defaultdict(list)
        for a, b, g in links:
            if g == speed:
                near[a].append(b), near[b].append(a)
        seen, todo = {src}, [src]
        while todo:
            for w in near[todo.pop()]:
                if w not in seen:
                    seen.add(w), todo.append(w)
        if dst in seen:
            return True
    return False


counts = collections.Counter()
for case in range(cases):
    n = rng.randint(3, 8)
    links = random_links(n)
    with open(topo, "w") as f:
        f.write("topology: explicit\ndevices: %d\nlinks:\n" % n)
        for a, b, g in links:
            f.write("  - {a: %d, b: %d, gbps: %d}\n" % (a, b, g))
    src, dst = rng.sample(range(n), 2)
    with open(model, "w") as f:
        f.write("graph g {\n  input x : f32[%d] @ device(%d);\n  y = copy(x) @ device(%d);\n  output y;\n}\n"
                % (rng.randint(1, 4000), src, dst))
    subprocess.run(["rm", "-rf", out])
    c = subprocess.run([os.path.join(bindir, "tspc"), model, "-t", topo, "-o", out], capture_output=True, text=True)
    expect = joined_at_one_speed(links, src, dst)
    if not expect:
        refused = c.returncode == 1 and "has links of one speed and vector size" in c.stderr
        counts["refused" if refused else "BROKEN"] += 1
        if not refused:
            print("case %d: %d -> %d should be refused: exit %d %s" % (case, src, dst, c.returncode, c.stderr[:200]))
        continue
    e = subprocess.run([os.path.join(bindir, "tsp-emu"), out, "--jitter", "on"], capture_output=True, text=True)
    good = c.returncode == 0 and e.returncode == 0 and "data: verified" in e.stdout
    counts["verified" if good else "BROKEN"] += 1
    if not good:
        print("case %d: %d -> %d should route: exit %d %s %s" % (case, src, dst, c.returncode, c.stderr[:200], e.stdout[-200:]))
print("%d cases: %d verified, %d refused, %d broken" % (cases, counts["verified"], counts["refused"], counts["BROKEN"]))
