"""cross_check.py MODEL BINDIR WORKDIR: runs one model through tspc and
tsp-emu on random real-valued inputs and compares the dumped output with
NumPy, an implementation nobody here wrote.

For each model below it draws inputs and params (seeded, so the test is
repeatable), writes them as .npy, compiles the model, emulates it with
--input for every input and --dump for the output, computes the same
model in NumPy (float64, each op's result rounded to its tensor's dtype as
the hardware stores it), and compares element by element within the
documented tolerance (docs/isa.md, section 5, "Tolerances"):

    |got - want| <= G x (atol + rtol x max(|want|, rms(want)))

(rtol, atol) = (1.3e-6, 1e-5) f32, (1e-3, 1e-5) f16; G grows with every
rounding op and with the length of each sum on the output's longest chain:
1 per add, 2 per exp/rsqrt/gelu, 1 + ceil(log2 n) per sum of n terms,
4 + ceil(log2 n) per softmax or layernorm over n, 4 + 2 ceil(log2 p)
per cholesky of order p (numpy.linalg.cholesky; the emulator checks L L^T
itself).  The NumPy side tracks G
with its own ops.  Prints one line: the model, the elements compared, the
worst error over its tolerance, and ok or FAIL; exits 1 on FAIL or if a tool
fails.  Needs /usr/bin/python3 with python3-numpy."""
import math, os, subprocess, sys
import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOL = {"f32": (1.3e-6, 1e-5), "f16": (1e-3, 1e-5)}
NP = {"f32": np.float32, "f16": np.float16}


class T:
    """A value with its dtype and growth factor G."""
    def __init__(self, v, dt, g=0):
        self.v, self.dt, self.g = v, dt, g


def store(v, dt):
    return v.astype(NP[dt]).astype(np.float64)


def log2c(n):
    return math.ceil(math.log2(n)) if n > 1 else 0


def matmul(a, b):
    k = a.v.shape[-1]
    return T(store(a.v @ b.v, a.dt), a.dt, max(a.g, b.g) + 1 + log2c(k))


def add(a, b):
    return T(store(a.v + b.v, a.dt), a.dt, max(a.g, b.g) + 1)


def gelu(a):
    erf = np.vectorize(math.erf)
    return T(store(0.5 * a.v * (1 + erf(a.v / math.sqrt(2))), a.dt), a.dt, a.g + 2)


def softmax(a):
    e = np.exp(a.v - a.v.max(axis=-1, keepdims=True))
    n = a.v.shape[-1]
    return T(store(e / e.sum(axis=-1, keepdims=True), a.dt), a.dt, a.g + 4 + log2c(n))


def layernorm(a, g, b):
    m = a.v.mean(axis=-1, keepdims=True)
    var = ((a.v - m) ** 2).mean(axis=-1, keepdims=True)
    y = (a.v - m) / np.sqrt(var + 1e-5) * g.v + b.v
    n = a.v.shape[-1]
    return T(store(y, a.dt), a.dt, max(a.g, g.g, b.g) + 4 + log2c(n))


def cholesky(a):
    p = a.v.shape[0]
    return T(store(np.linalg.cholesky(a.v), a.dt), a.dt, a.g + 4 + 2 * log2c(p))


def transpose(a):
    return T(a.v.swapaxes(-1, -2), a.dt, a.g)


# ---- models: their inputs (name -> shape, dtype, scale) and their NumPy form ----

def weights(rng, k, n):
    return rng.normal(0, 1 / math.sqrt(k), (k, n))


def mlp_inputs(rng):
    return {"x": rng.normal(0, 1, (50, 300)), "w1": weights(rng, 300, 700), "b1": rng.normal(0, 0.1, 700),
            "w2": weights(rng, 700, 130), "b2": rng.normal(0, 0.1, 130)}


def mlp_numpy(t):
    a = gelu(add(matmul(t["x"], t["w1"]), t["b1"]))
    return add(matmul(a, t["w2"]), t["b2"])


def encoder_inputs(rng):
    d = {"x": rng.normal(0, 1, (48, 200))}
    for w in ("wq", "wk", "wv", "wo"):
        d[w] = weights(rng, 200, 200)
    d["w1"], d["w2"] = weights(rng, 200, 350), weights(rng, 350, 200)
    d["c1"], d["c2"] = rng.normal(0, 0.1, 350), rng.normal(0, 0.1, 200)
    for g, b in (("g1", "b1"), ("g2", "b2")):
        d[g], d[b] = 1 + rng.normal(0, 0.1, 200), rng.normal(0, 0.1, 200)
    return d


def encoder_numpy(t):
    q, k, v = matmul(t["x"], t["wq"]), matmul(t["x"], t["wk"]), matmul(t["x"], t["wv"])
    p = softmax(matmul(q, transpose(k)))
    r1 = add(t["x"], matmul(matmul(p, v), t["wo"]))
    n1 = layernorm(r1, t["g1"], t["b1"])
    f1a = gelu(add(matmul(n1, t["w1"]), t["c1"]))
    r2 = add(n1, add(matmul(f1a, t["w2"]), t["c2"]))
    return layernorm(r2, t["g2"], t["b2"])


def gelu_extremes_inputs(rng):
    big = np.linspace(-3.4e38, 3.4e38, 100)
    return {"x": np.stack([big, rng.permutation(big), rng.uniform(-3.4e38, 3.4e38, 100)])}


def gelu_extremes_numpy(t):
    return gelu(t["x"])


def spd_inputs(p):
    """A random symmetric positive definite [p x p] matrix, M M^T / p + I
    (its eigenvalues between 1 and about 5)."""
    def make(rng):
        m = rng.normal(0, 1, (p, p))
        return {"a": m @ m.T / p + np.eye(p)}
    return make


def cholesky_numpy(t):
    return cholesky(t["a"])


MODELS = {
    # name: (model file, topology, dtype, inputs, numpy model, output)
    "mlp": ("examples/mlp1.tg", "examples/one.yaml", "f16", mlp_inputs, mlp_numpy, "y"),
    "encoder": ("test/lit/Inputs/model/encoder-small.tg", "examples/one.yaml", "f16", encoder_inputs,
                encoder_numpy, "y"),
    "gelu-extremes": ("test/lit/Inputs/model/gelu-extremes.tg", "examples/one.yaml", "f32", gelu_extremes_inputs,
                      gelu_extremes_numpy, "y"),
    "cholesky": ("test/lit/Inputs/model/cholesky-700.tg", "examples/one.yaml", "f16", spd_inputs(700),
                 cholesky_numpy, "l"),
    "cholesky-f32": ("test/lit/Inputs/model/cholesky-f32.tg", "examples/one.yaml", "f32", spd_inputs(333),
                     cholesky_numpy, "l"),
}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        print("cross_check: %s exited with status %d" % (" ".join(cmd), r.returncode))
        sys.exit(1)
    return r.stdout


def judge(name, got, want):
    rtol, atol = TOL[want.dt]
    w = want.v.reshape(got.shape)
    rms = math.sqrt(float(np.mean(w * w)))
    allowed = want.g * (atol + rtol * np.maximum(np.abs(w), rms))
    ratio = np.abs(got - w) / allowed
    worst = float(ratio.max())
    ok = bool(np.all(np.isfinite(got))) and worst <= 1
    print("%s: %d elements, worst error %.3g of its tolerance (G %d): %s" %
          (name, got.size, worst, want.g, "ok" if ok else "FAIL"))
    return ok


def cross_check_model(name, bindir, work):
    path, topo, dt, make_inputs, numpy_model, output = MODELS[name]
    rng = np.random.default_rng(2026)
    raw = make_inputs(rng)
    args, tensors = [], {}
    for k, v in raw.items():
        f = os.path.join(work, k + ".npy")
        np.save(f, v.astype(NP[dt]))
        args += ["--input", "%s=%s" % (k, f)]
        tensors[k] = T(store(v, dt), dt)
    out = os.path.join(work, "out")
    run([os.path.join(bindir, "tspc"), os.path.join(ROOT, path), "-t", os.path.join(ROOT, topo), "-o", out])
    dump = os.path.join(work, output + ".npy")
    print(run([os.path.join(bindir, "tsp-emu"), out] + args + ["--dump", "%s=%s" % (output, dump)]).strip())
    return judge(name, np.load(dump).astype(np.float64), numpy_model(tensors))


def emulate_collective(bindir, work, model, shape, seed):
    """Compiles model (g @ each -> s) for fc4, gives each of the 4 devices
    its own seeded real-valued f32 g (g@D), runs it and returns the inputs
    (float64) and each device's dumped s."""
    rng = np.random.default_rng(seed)
    out = os.path.join(work, "out")
    run([os.path.join(bindir, "tspc"), os.path.join(ROOT, model), "-t", os.path.join(ROOT, "examples/fc4.yaml"),
         "-o", out])
    args, parts = [], []
    for d in range(4):
        g = rng.normal(0, 1, shape).astype(np.float32)
        f = os.path.join(work, "g%d.npy" % d)
        np.save(f, g)
        args += ["--input", "g@%d=%s" % (d, f), "--dump", "s@%d=%s" % (d, os.path.join(work, "s%d.npy" % d))]
        parts.append(g.astype(np.float64))
    print(run([os.path.join(bindir, "tsp-emu"), out] + args).strip())
    return parts, [np.load(os.path.join(work, "s%d.npy" % d)).astype(np.float64) for d in range(4)]


def cross_check_allreduce(bindir, work):
    """A real-valued f32 allreduce over fc4: each device's own g."""
    parts, got = emulate_collective(bindir, work, "test/lit/Inputs/model/allreduce-real.tg", 1000, 7)
    want = T(store(sum(parts), "f32"), "f32", 1 + log2c(4))
    return all([judge("allreduce device %d" % d, got[d], want) for d in range(4)])


def judge_scatter(parts, got, shard, what):
    """Each of the 4 devices' shard of the sum completed with zeros (the pad
    rows or elements), and the zeros exactly zero."""
    total = sum(parts)
    padded = np.concatenate([total, np.zeros((4 * shard - len(total),) + total.shape[1:])])
    ok = all([judge("reduce_scatter device %d" % d, got[d],
                    T(store(padded[shard * d:shard * (d + 1)], "f32"), "f32", 1 + log2c(4))) for d in range(4)])
    if np.any(got[3][len(total) - 3 * shard:] != 0):
        print("reduce_scatter device 3: %s are not zero: FAIL" % what)
        ok = False
    return ok


def cross_check_reduce_scatter(bindir, work):
    """An f32 reduce_scatter of 37 rows over fc4's 4 devices: each gets 10
    rows of the sum, the last 7 and 3 zero rows (the pad rows)."""
    parts, got = emulate_collective(bindir, work, "test/lit/Inputs/model/reduce-scatter-uneven.tg", (37, 5), 11)
    return judge_scatter(parts, got, 10, "pad rows")


def cross_check_reduce_scatter_rank1(bindir, work):
    """An f32 reduce_scatter of 1001 elements over fc4's 4 devices: each
    gets 251 elements of the sum, the last 248 and 3 zeros."""
    parts, got = emulate_collective(bindir, work, "test/lit/Inputs/model/reduce-scatter-rank1.tg", 1001, 13)
    return judge_scatter(parts, got, 251, "the 3 elements after the sum")


COLLECTIVES = {"allreduce": cross_check_allreduce, "reduce-scatter-uneven": cross_check_reduce_scatter,
               "reduce-scatter-rank1": cross_check_reduce_scatter_rank1}


def main():
    name, bindir, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    ok = COLLECTIVES[name](bindir, work) if name in COLLECTIVES else cross_check_model(name, bindir, work)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
