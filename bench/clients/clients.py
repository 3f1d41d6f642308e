#!/usr/bin/env python3
"""One process of the client benchmark: real PyTorch / PyTorch Geometric programs on one graph.

Run it plain and under LD_PRELOAD=libtcsparse_preload.so (bench/clients/run.py does both, in
interleaved rounds).  For each client asked for it prints one JSON line on stdout:

  gcn_torch  two-layer GCN (tanh) in plain PyTorch with a torch.sparse CSR adjacency:
             one training epoch = forward, cross-entropy, backward, Adam step
  gcn_pyg    the same with torch_geometric.nn.GCNConv(normalize=False), the normalised
             adjacency passed as a torch.sparse CSR `edge_index` (PyG's adj_t form)
  gat        two attention layers: scores = torch.sparse.sampled_addmm(A, Q, K^T) (cuSPARSE
             SDDMM), softmax over each row's nonzeros, then attention @ V (SpMM); a training
             epoch as above, or the forward pass alone where autograd refuses the backward
  spmm       torch.sparse.mm(A, X) with X of N columns, one measurement per N

The adjacency is A = D^-1/2 (G + I) D^-1/2 of the graph G, a float32 torch.sparse_csr_tensor.
Timing: warm-up iterations, then median of timed samples (CUDA events on a GPU).  Check, after
the timing (so that under the interposer the checked calls take the route it settled on): the
FP32 result against the same computation in float64 on the same device, as a relative
Frobenius error: for the training clients the loss and every parameter's gradient of the
first step (from the initial parameters), for spmm the product.  --profile adds, per
measurement, the GPU time of its sparse-product kernels from torch.profiler.
"""
import argparse
import copy
import gc
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graphs  # noqa: E402

CLIENTS = ("gcn_torch", "gcn_pyg", "gat", "spmm")
# Kernels of the sparse products: cuSPARSE's SpMM / SDDMM kernels (csrmm*, *spmm*, *sddmm*,
# coomm*) and everything tcsparse launches (namespace tc::, the plan fingerprint and the
# device-side check of a kept plan).
SPARSE_KERNELS = r"csrmm|spmm|sddmm|coomm|matrix_scalar_multiply|\btc::|tc_fingerprint|tc_guard"
# --device cpu (a check of this code without a GPU): the aten entry points of the products
SPARSE_OPS_CPU = r"^aten::(_sparse_mm|_sparse_addmm|sparse_sampled_addmm)$"
TOL_FP32 = 1e-5
TOL_TF32 = 5e-3  # the bound tcsparse's own tests use for TCSPARSE_MATH=tf32


def relerr(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    if not torch.isfinite(out).all():
        return float("inf")
    den = ref.norm().item()
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_samples(fn, device, warmup, reps, inner):
    """ms per call of fn: `reps` samples of `inner` calls each, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    sync(device)
    samples = []
    for _ in range(reps):
        if device.type == "cuda":
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(inner):
                fn()
            e1.record()
            e1.synchronize()
            samples.append(e0.elapsed_time(e1) / inner)
        else:
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples.append((time.perf_counter() - t0) * 1e3 / inner)
    return samples


def _short(name):
    name = re.sub(r"^void\s+", "", name)
    return re.split(r"[<(]", name, maxsplit=1)[0].strip() or name[:80]


def profile_calls(fn, device, iters, pattern):
    """Time of the sparse-product kernels per call of fn, from a torch.profiler trace.

    GPU: the trace's kernels (and memcpy / memset) are the GPU time; the kernels whose name
    matches `pattern` are the sparse products.  CPU (a check of this code without a GPU): the
    outermost aten operators matching `pattern` stand for them."""
    acts = [torch.profiler.ProfilerActivity.CUDA if device.type == "cuda"
            else torch.profiler.ProfilerActivity.CPU]
    fn()
    sync(device)
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(iters):
            fn()
        sync(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    events = [e for e in events if e.get("ph") == "X" and "dur" in e]
    rx = re.compile(pattern, re.I)
    if device.type == "cuda":
        busy = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        hits = [e for e in busy if e.get("cat") == "kernel" and rx.search(e["name"])]
    else:
        busy = [e for e in events if e.get("cat") == "cpu_op"]
        hits, end = [], {}
        for e in sorted((e for e in busy if rx.search(e["name"])), key=lambda e: e["ts"]):
            if e["ts"] >= end.get(e.get("tid"), -1.0):  # outermost only: nested ones are inside
                hits.append(e)
                end[e.get("tid")] = e["ts"] + e["dur"]
    by_name = {}
    for e in hits:
        c = by_name.setdefault(_short(e["name"]), [0, 0.0])
        c[0] += 1
        c[1] += e["dur"]
    others = {}
    for e in busy:
        if e not in hits and "cusparse" in e["name"].lower():
            others[_short(e["name"])] = others.get(_short(e["name"]), 0.0) + e["dur"]
    per = 1e3 * iters  # trace durations are in us
    return {
        "iters": iters,
        "sparse_ms": sum(e["dur"] for e in hits) / per,
        "busy_ms": sum(e["dur"] for e in busy) / per,
        "matched": sorted(([k, v[0] / iters, v[1] / per] for k, v in by_name.items()),
                          key=lambda x: -x[2]),
        "unmatched_cusparse": sorted(([k, v / per] for k, v in others.items()),
                                     key=lambda x: -x[1]),
    }


# ---------------------------------------------------------------- graph on the device
class Graph:
    def __init__(self, spec, args, device):
        n, indptr, indices = graphs.load(spec, args.data, args.cache)
        # G + I: every row gains its diagonal entry, inserted in column order
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        key = np.concatenate([rows * n + indices, np.arange(n, dtype=np.int64) * (n + 1)])
        key.sort()
        cols = key % n
        crow = indptr + np.arange(n + 1, dtype=np.int64)
        deg = np.diff(crow).astype(np.float64)
        dinv = 1.0 / np.sqrt(deg)
        vals = dinv[key // n] * dinv[cols]
        idx = torch.int32 if args.index_dtype == "int32" else torch.int64
        self.n, self.edges, self.nnz = n, int(indices.size), int(cols.size)
        self.crow = torch.from_numpy(crow).to(device=device, dtype=idx)
        self.col = torch.from_numpy(cols).to(device=device, dtype=idx)
        v32 = torch.from_numpy(vals).to(device=device, dtype=torch.float32)
        # the float64 reference multiplies the very matrix the FP32 run uses
        self.a32 = torch.sparse_csr_tensor(self.crow, self.col, v32, (n, n),
                                           check_invariants=False)
        self.a64 = torch.sparse_csr_tensor(self.crow, self.col, v32.double(), (n, n),
                                           check_invariants=False)
        self.rows = torch.repeat_interleave(
            torch.arange(n, device=device), torch.diff(self.crow.long()))


# ---------------------------------------------------------------- models
class GCNTorch(torch.nn.Module):
    """Two GCN layers, A (X W1) + b1 -> tanh -> A (H W2) + b2 (tanh: smooth, so the FP32 and
    float64 runs see the same function; ReLU's kink would flip on rounding)."""

    def __init__(self, fin, hidden, fout):
        super().__init__()
        self.lin1 = torch.nn.Linear(fin, hidden)
        self.lin2 = torch.nn.Linear(hidden, fout)

    def forward(self, g, adj, x):
        h = torch.tanh(torch.sparse.mm(adj, x @ self.lin1.weight.t()) + self.lin1.bias)
        return torch.sparse.mm(adj, h @ self.lin2.weight.t()) + self.lin2.bias


class GCNPyG(torch.nn.Module):
    def __init__(self, fin, hidden, fout):
        super().__init__()
        from torch_geometric.nn import GCNConv
        self.conv1 = GCNConv(fin, hidden, normalize=False)
        self.conv2 = GCNConv(hidden, fout, normalize=False)

    def forward(self, g, adj, x):
        return self.conv2(torch.tanh(self.conv1(x, adj)), adj)


class Attention(torch.nn.Module):
    """One head: softmax over each row's nonzeros of (Q K^T / sqrt(d)) sampled at A's
    pattern, times V."""

    def __init__(self, fin, fout, dqk):
        super().__init__()
        self.q = torch.nn.Linear(fin, dqk, bias=False)
        self.k = torch.nn.Linear(fin, dqk, bias=False)
        self.v = torch.nn.Linear(fin, fout)
        self.scale = 1.0 / math.sqrt(dqk)

    def forward(self, g, adj, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = torch.sparse.sampled_addmm(adj, q, k.t(), beta=0.0, alpha=self.scale).values()
        # row maxima as constants: softmax does not depend on a per-row shift
        m = torch.full((g.n,), -math.inf, device=s.device, dtype=s.dtype)
        m = m.scatter_reduce(0, g.rows, s.detach(), "amax")
        e = torch.exp(s - m[g.rows])
        den = torch.zeros(g.n, device=s.device, dtype=s.dtype).index_add(0, g.rows, e)
        attn = torch.sparse_csr_tensor(adj.crow_indices(), adj.col_indices(), e / den[g.rows],
                                       adj.shape, check_invariants=False)
        return torch.sparse.mm(attn, v)


class GAT(torch.nn.Module):
    def __init__(self, fin, hidden, fout, dqk):
        super().__init__()
        self.l1 = Attention(fin, hidden, dqk)
        self.l2 = Attention(hidden, fout, dqk)

    def forward(self, g, adj, x):
        return self.l2(g, adj, torch.tanh(self.l1(g, adj, x)))


# ---------------------------------------------------------------- clients
def train_client(name, model, g, args, device, notes):
    """Measurements and check of a training client: one epoch = forward, cross-entropy,
    backward, Adam step.  Falls back to the forward pass alone where autograd refuses the
    backward (reported in notes)."""
    gen = torch.Generator(device=device).manual_seed(args.seed + 1)
    x = torch.randn(g.n, args.features, device=device, generator=gen)
    y = torch.randint(0, args.classes, (g.n,), device=device, generator=gen)
    init = copy.deepcopy(model.state_dict())
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def epoch():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(g, g.a32, x), y)
        loss.backward()
        opt.step()

    def forward():
        with torch.no_grad():
            model(g, g.a32, x)

    try:
        epoch()
        step, label, backward = epoch, name, True
    except (RuntimeError, NotImplementedError) as e:
        notes.append(f"backward refused, forward only: {str(e).splitlines()[0][:200]}")
        step, label, backward = forward, name + "_fwd", False

    def check():
        model.load_state_dict(init)
        ref = copy.deepcopy(model).double()
        errs = {}
        for m in (model, ref):
            m.zero_grad(set_to_none=True)
        if backward:
            l32 = F.cross_entropy(model(g, g.a32, x), y)
            l64 = F.cross_entropy(ref(g, g.a64, x.double()), y)
            l32.backward()
            l64.backward()
            errs["loss"] = relerr(l32, l64)
            p64 = dict(ref.named_parameters())
            for pn, p in model.named_parameters():
                errs["grad:" + pn] = relerr(p.grad, p64[pn].grad)
        else:
            with torch.no_grad():
                errs["out"] = relerr(model(g, g.a32, x), ref(g, g.a64, x.double()))
        return errs

    unit = "ms/epoch" if backward else "ms/forward"
    return [(label, unit, step, 1)], check


def make_client(name, g, args, device, notes):
    torch.manual_seed(args.seed)
    if name == "gcn_torch":
        return train_client(name, GCNTorch(args.features, args.hidden, args.classes)
                            .to(device), g, args, device, notes)
    if name == "gcn_pyg":
        return train_client(name, GCNPyG(args.features, args.hidden, args.classes)
                            .to(device), g, args, device, notes)
    if name == "gat":
        return train_client(name, GAT(args.features, args.hidden, args.classes, args.qk)
                            .to(device), g, args, device, notes)
    if name == "spmm":
        gen = torch.Generator(device=device).manual_seed(args.seed + 2)
        xs = {n: torch.randn(g.n, n, device=device, generator=gen) for n in args.spmm_n}
        meas = [(f"spmm_n{n}", "ms/call", (lambda x=x: torch.sparse.mm(g.a32, x)), args.inner)
                for n, x in xs.items()]

        def check():
            return {f"spmm_n{n}": relerr(torch.sparse.mm(g.a32, x),
                                         torch.sparse.mm(g.a64, x.double()))
                    for n, x in xs.items()}
        return meas, check
    raise ValueError(f"unknown client '{name}' (known: {', '.join(CLIENTS)})")


def interposer():
    """Path of the libtcsparse_preload.so mapped into this process, else None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libtcsparse_preload" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def run_client(name, g, spec, args, device, base):
    rec = dict(base, client=name, graph=spec, nodes=g.n, edges=g.edges, nnz=g.nnz)
    notes = []
    t0 = time.perf_counter()
    try:
        meas, check = make_client(name, g, args, device, notes)
        rec["measurements"] = []
        for label, unit, fn, inner in meas:
            s = time_samples(fn, device, args.warmup, args.reps, inner)
            rec["measurements"].append({"name": label, "unit": unit, "ms": statistics.median(s),
                                        "samples": [round(v, 5) for v in s]})
        errs = check()
        rec["check"] = errs
        rec["check_max"] = max(errs.values())
        rec["ok"] = rec["check_max"] <= args.tol
        if args.profile:
            for m, (label, unit, fn, inner) in zip(rec["measurements"], meas):
                m["profile"] = profile_calls(fn, device, args.profile_iters, args.sparse_kernels)
    except Exception as e:  # reported in the line; the next client still runs
        rec["ok"] = False
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        rec["traceback"] = traceback.format_exc()[-2000:]
    rec["notes"] = notes
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", required=True, help="graph spec (bench/clients/graphs.py)")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--side", default="", help="label copied into each line (plain/preload)")
    ap.add_argument("--data", default=None, help="Matrix Market folder (default $TC_DATA_DIR "
                    "or ../shared/data next to the repository)")
    ap.add_argument("--cache", default="/tmp", help="folder of the graphs' .npz cache")
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--qk", type=int, default=64, help="gat: width of Q and K")
    ap.add_argument("--spmm-n", default="16,64,128,256")
    ap.add_argument("--index-dtype", default="int64", choices=("int64", "int32"))
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--inner", type=int, default=10, help="spmm: calls per timed sample")
    ap.add_argument("--tf32", action="store_true",
                    help=f"TCSPARSE_MATH=tf32 is set: accept {TOL_TF32} instead of {TOL_FP32}")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-iters", type=int, default=5)
    ap.add_argument("--sparse-kernels", default=None,
                    help=f"regex of the sparse-product kernel names (default: "
                    f"'{SPARSE_KERNELS}'; with --device cpu '{SPARSE_OPS_CPU}')")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    args.spmm_n = [int(v) for v in args.spmm_n.split(",") if v]
    args.tol = TOL_TF32 if args.tf32 else TOL_FP32
    if args.sparse_kernels is None:
        args.sparse_kernels = SPARSE_KERNELS if args.device == "cuda" else SPARSE_OPS_CPU
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"graph": args.graph, "ok": False, "error": "no CUDA device"}))
        return 2
    pyg = None
    if "gcn_pyg" in args.clients.split(","):  # its import costs seconds: only where used
        try:
            import torch_geometric
            pyg = torch_geometric.__version__
        except ImportError:
            pass
    base = {"side": args.side, "device": args.device,
            "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "torch": torch.__version__, "pyg": pyg, "interposer": interposer(),
            "tol": args.tol, "pid": os.getpid()}
    t0 = time.perf_counter()
    try:
        g = Graph(args.graph, args, device)
    except Exception as e:
        for name in args.clients.split(","):
            print(json.dumps(dict(base, client=name, graph=args.graph, ok=False,
                                  error=f"graph: {type(e).__name__}: {e}")), flush=True)
        return 1
    base["graph_seconds"] = round(time.perf_counter() - t0, 2)
    status = 0
    for name in args.clients.split(","):
        rec = run_client(name, g, args.graph, args, device, base)
        print(json.dumps(rec), flush=True)
        status |= not rec["ok"]
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return status


if __name__ == "__main__":
    sys.exit(main())
