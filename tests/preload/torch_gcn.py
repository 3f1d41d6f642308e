#!/usr/bin/env python3
"""PyTorch client of the cuSPARSE interposer (run it with and without
LD_PRELOAD=libtcsparse_preload.so; tests/preload/run-clients.sh does both).

On a graph read from a Matrix Market file (or a generated block-diagonal one), it builds the
GCN-normalised adjacency  A = D^-1/2 (G + I) D^-1/2  as a CUDA sparse CSR tensor and
  1. multiplies it by a dense tensor (A @ X, FP32),
  2. runs a two-layer GCN (tanh activation) forward and backward built from that product,
checks every FP32 result against the same computation in FP64 (relative Frobenius error
<= 1e-5), and times both (CUDA events, warm-up, median).  One JSON line on stdout.
"""
import argparse
import json
import os
import statistics
import sys

import torch

# The Matrix Market reader of the client benchmark (vectorised; one reader for both).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bench", "clients"))
import graphs  # noqa: E402


def block_graph(nodes, block, extra, seed):
    """Dense blocks on the diagonal plus `extra` random edges per node."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.arange(nodes)
    b0 = (idx // block) * block
    rows = idx.repeat_interleave(block)
    cols = (b0.repeat_interleave(block) + torch.arange(block).repeat(nodes)).clamp(max=nodes - 1)
    er = idx.repeat_interleave(extra)
    ec = torch.randint(0, nodes, (nodes * extra,), generator=g)
    return nodes, nodes, torch.cat([rows, er]), torch.cat([cols, ec])


def gcn_adjacency(n, rows, cols, dtype, device):
    keep = rows < n
    keep &= cols < n
    rows, cols = rows[keep], cols[keep]
    loops = torch.arange(n)
    rows, cols = torch.cat([rows, loops]), torch.cat([cols, loops])
    key = torch.unique(rows * n + cols)  # sorted, duplicates merged
    rows, cols = key // n, key % n
    deg = torch.bincount(rows, minlength=n).to(torch.float64)
    dinv = deg.rsqrt()
    vals = dinv[rows] * dinv[cols]
    a = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (n, n)).coalesce()
    return a.to_sparse_csr().to(dtype=dtype, device=device)


def relerr(out, ref):
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("inf")
    den = ref.norm().item()
    return (out - ref).norm().item() / (den if den > 0 else 1.0)


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mtx", help="Matrix Market graph (default: a generated block graph)")
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_gcn: no CUDA device: skipped")
        return 77
    dev = torch.device("cuda")
    if args.mtx:
        n, rows, cols = graphs.read_mtx(args.mtx)  # 0-based, symmetric storage expanded
        rows, cols = torch.from_numpy(rows), torch.from_numpy(cols)
        name = args.mtx.rsplit("/", 1)[-1]
    else:
        m, n, rows, cols = block_graph(args.nodes, 16, 2, 1)
        name = f"block-graph:{args.nodes}"
    a32 = gcn_adjacency(n, rows, cols, torch.float32, dev)
    a64 = a32.to(torch.float64)
    g = torch.Generator(device=dev).manual_seed(7)
    x = torch.randn(n, args.features, device=dev, generator=g)
    w1 = (torch.randn(args.features, args.hidden, device=dev, generator=g) * 0.1).requires_grad_()
    w2 = (torch.randn(args.hidden, args.classes, device=dev, generator=g) * 0.1).requires_grad_()
    w1d = w1.detach().double().requires_grad_()
    w2d = w2.detach().double().requires_grad_()

    def gcn(a, x, w1, w2):
        h = torch.tanh(a @ (x @ w1))  # smooth: FP32 and FP64 see the same function
        return a @ (h @ w2)

    def step(a, x, w1, w2):
        out = gcn(a, x, w1, w2)
        loss = (out * out).mean()
        w1.grad = None
        w2.grad = None
        loss.backward()
        return out

    # correctness: FP32 against FP64 (the FP64 products go to cuSPARSE under the interposer)
    y32, y64 = a32 @ x, a64 @ x.double()
    o32 = step(a32, x, w1, w2)
    o64 = step(a64, x.double(), w1d, w2d)
    errs = {
        "spmm": relerr(y32, y64),
        "gcn_out": relerr(o32.detach(), o64.detach()),
        "grad_w1": relerr(w1.grad, w1d.grad),
        "grad_w2": relerr(w2.grad, w2d.grad),
    }
    torch.cuda.synchronize()
    ms_spmm = timed(lambda: a32 @ x, 3, args.reps)
    ms_gcn = timed(lambda: step(a32, x, w1, w2), 3, args.reps)
    ok = all(e <= 1e-5 for e in errs.values())
    print(json.dumps({"graph": name, "nodes": n, "nnz": a32._nnz(), "features": args.features,
                      "hidden": args.hidden, "classes": args.classes,
                      "relerr": errs, "ms_spmm": round(ms_spmm, 4),
                      "ms_gcn_fwd_bwd": round(ms_gcn, 4), "ok": ok,
                      "torch": torch.__version__}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
