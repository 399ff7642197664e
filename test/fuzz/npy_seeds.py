#!/usr/bin/env python3
"""npy_seeds.py DIR: writes the .npy fuzzer's seed corpus into DIR: small
arrays as numpy itself writes them, in the dtypes the reader takes (<f4 <f2
<i4 |i1) and some it refuses (<f8, >f4, bool, 0-d, empty, Fortran order),
in format versions 1.0, 2.0 and 3.0 (make fuzz runs it with the system's
python3, which has numpy)."""
import os
import sys

import numpy as np
from numpy.lib import format as npf

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, arr, version=None):
    with open(os.path.join(out, name + ".npy"), "wb") as f:
        npf.write_array(f, arr, version=version, allow_pickle=False)


r = np.arange(24)
save("f4-1d", r[:5].astype("<f4"))
save("f4-2d", r.reshape(4, 6).astype("<f4"))
save("f2-3d", r.reshape(2, 3, 4).astype("<f2"))
save("i4-2d", (r - 12).reshape(3, 8).astype("<i4"))
save("i1-1d", (r - 12).astype("i1"))
save("f4-8d", np.ones((1, 2, 1, 2, 1, 2, 1, 3), "<f4"))
save("f4-v2", r.reshape(6, 4).astype("<f4"), version=(2, 0))
save("i4-v3", r[:3].astype("<i4"), version=(3, 0))
save("f4-fortran", np.asfortranarray(r.reshape(4, 6).astype("<f4")))
save("f8", r[:4].astype("<f8"))
save("f4-big-endian", r[:4].astype(">f4"))
save("bool", r[:4] > 1)
save("f4-0d", np.array(1.5, "<f4"))
save("f4-empty", np.zeros((0, 3), "<f4"))
save("f2-nan-inf", np.array([np.nan, np.inf, -np.inf, -0.0], "<f2"))
