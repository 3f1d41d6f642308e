#!/usr/bin/env python3
"""The cuSPARSE interposer inside torch.distributed: a two-layer GCN (clients.py's GCNTorch)
trained with DistributedDataParallel over NCCL, one GPU per rank, each rank holding its share
of a batch of graphs (--copies copies of one graph along the diagonal).

The launcher (the normal entry) runs one process per run, in interleaved rounds: world size
--ranks and the single-GPU baseline with the same per-rank work (--copies / --ranks copies),
each plain and under LD_PRELOAD=libtcsparse_preload.so.  A run process (--worker) starts its
ranks with torch.multiprocessing.spawn (they inherit its environment, LD_PRELOAD included);
rank 0 prints one JSON line.  The launcher prints ms/epoch per world size and side, the
speed-ups, the loss trajectories' agreement and the float64 checks.  bench/clients/README.md.
"""
import os

# NVLink multicast (NVLS) off: mandatory on the GPU machines this runs on
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
for _k, _v in NO_MULTICAST.items():
    os.environ.setdefault(_k, _v)

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
SIZES = ("graph", "copies", "warmup", "epochs", "features", "hidden", "classes", "lr", "seed",
         "index_dtype", "cache")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--so", default=os.path.join(REPO, "compat", "cusparse", ".libs",
                                                 "libtcsparse_preload.so"),
                    help="the interposer (default: this tree's build)")
    ap.add_argument("--data", default=None, help="Matrix Market folder (default $TC_DATA_DIR "
                    "or ../shared/data next to the repository)")
    ap.add_argument("--cache", default="/tmp", help="folder of the graphs' .npz cache")
    ap.add_argument("--graph", default="mtx:PROTEINS_full", help="graph spec (graphs.py)")
    ap.add_argument("--copies", type=int, default=64,
                    help="copies of the graph in the batch, split evenly between the ranks")
    ap.add_argument("--ranks", type=int, default=2, help="world size W (one GPU per rank)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per world size and side")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=50, help="timed epochs")
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--classes", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--index-dtype", default="int64", choices=("int64", "int32"))
    ap.add_argument("--loss-tol", type=float, default=1e-4,
                    help="max relative loss difference, preload against plain, over epochs")
    ap.add_argument("--tol", type=float, default=1e-5, help="bound of the float64 check")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per process")
    ap.add_argument("--json", default=None, help="write everything to this file")
    ap.add_argument("--device-check", action="store_true",
                    help="only check that W GPUs are visible (exit 2 if not)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="plain", help=argparse.SUPPRESS)
    args = ap.parse_args()
    world = args.world if args.worker else args.ranks
    if world < 1 or args.copies < world or args.copies % world:
        ap.error(f"--copies {args.copies} must be a positive multiple of the world size {world}")
    return args


# ---------------------------------------------------------------- one rank
def build_rank(args, rank, device):
    """This rank's copies rank*c/W .. (rank+1)*c/W - 1 of A along the diagonal (float32, and
    float64 from the same values), features and labels.  Copy j's features and labels come
    from a generator seeded by j, so the batch is the same whatever the world size."""
    import torch
    import clients
    g = clients.Graph(args.graph, argparse.Namespace(data=args.data, cache=args.cache,
                                                     index_dtype="int64"), torch.device("cpu"))
    k = args.copies // args.world
    n, nnz = g.n, g.nnz
    step = torch.arange(k, dtype=torch.int64)[:, None]
    crow = torch.cat([(g.crow[:-1][None, :] + step * nnz).reshape(-1),
                      torch.tensor([k * nnz], dtype=torch.int64)])
    col = (g.col[None, :] + step * n).reshape(-1)
    idx = torch.int32 if args.index_dtype == "int32" else torch.int64
    if idx == torch.int32 and k * max(n, nnz) >= 2 ** 31:
        raise ValueError(f"{k} copies of {nnz} nonzeros do not fit 32-bit indices")
    crow, col = crow.to(device=device, dtype=idx), col.to(device=device, dtype=idx)
    v32 = g.a32.values().repeat(k).to(device)
    a32 = torch.sparse_csr_tensor(crow, col, v32, (k * n, k * n), check_invariants=False)
    a64 = torch.sparse_csr_tensor(crow, col, v32.double(), (k * n, k * n),
                                  check_invariants=False)
    xs, ys = [], []
    for j in range(rank * k, (rank + 1) * k):
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + j)
        xs.append(torch.randn(n, args.features, generator=gen))
        ys.append(torch.randint(0, args.classes, (n,), generator=gen))
    return a32, a64, torch.cat(xs).to(device), torch.cat(ys).to(device), k * n, k * nnz


def rank_main(rank, args, init):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel
    import clients
    warnings.filterwarnings("ignore", message=".*[Ss]parse.*")
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=args.world)
    t0 = time.perf_counter()
    a32, a64, x, y, nodes, nnz = build_rank(args, rank, device)
    build_s = time.perf_counter() - t0
    torch.manual_seed(args.seed)  # the same initial parameters on every rank
    model = clients.GCNTorch(args.features, args.hidden, args.classes).to(device)

    # float64 check of the first forward pass and its loss, from the initial parameters
    ref = copy.deepcopy(model).double()
    with torch.no_grad():
        out32, out64 = model(None, a32, x), ref(None, a64, x.double())
        err_out = clients.relerr(out32, out64)
        err_loss = clients.relerr(F.cross_entropy(out32, y), F.cross_entropy(out64, y))
    del ref, out32, out64, a64
    torch.cuda.empty_cache()

    ddp = DistributedDataParallel(model, device_ids=[rank], output_device=rank,
                                  find_unused_parameters=False)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    losses, events = [], []
    for i in range(args.warmup + args.epochs):
        if i >= args.warmup:
            ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            ev[0].record()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(None, a32, x), y)
        loss.backward()  # DDP's all-reduce of the gradients
        opt.step()
        losses.append(loss.detach())
        if i >= args.warmup:
            ev[1].record()
            events.append(ev)
    torch.cuda.synchronize(device)
    ms = [a.elapsed_time(b) for a, b in events]
    traj = torch.stack(losses)
    dist.all_reduce(traj)  # sum over ranks; each rank's loss is a mean over as many nodes
    traj = (traj / args.world).tolist()
    mine = {"gpu": torch.cuda.get_device_name(device), "ms": statistics.median(ms),
            "samples": [round(v, 5) for v in ms], "relerr_out": err_out,
            "relerr_loss": err_loss, "interposer": clients.interposer(),
            "build_s": round(build_s, 2)}
    every = [None] * args.world
    dist.all_gather_object(every, mine)
    if rank == 0:
        errs = [max(r["relerr_out"], r["relerr_loss"]) for r in every]
        print(json.dumps({
            "mode": args.mode, "world": args.world, "graph": args.graph, "copies": args.copies,
            "copies_per_rank": args.copies // args.world, "nodes_per_rank": nodes,
            "nnz_per_rank": nnz, "warmup": args.warmup, "epochs": args.epochs,
            "ms": [r["ms"] for r in every], "loss": traj, "relerr": max(errs),
            "gpus": [r["gpu"] for r in every], "torch": torch.__version__,
            "ranks": every}), flush=True)
    dist.destroy_process_group()


def worker(args):
    import torch
    import torch.multiprocessing as mp
    have = torch.cuda.device_count()
    if have < args.world:
        print(f"ddp.py: {have} GPU(s) visible, world size {args.world} needs "
              f"{args.world}", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="tcsparse-ddp-")
    try:
        mp.spawn(rank_main, args=(args, "file://" + os.path.join(tmp, "store")),
                 nprocs=args.world, join=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ---------------------------------------------------------------- the launcher
def child_env(args, mode):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(NO_MULTICAST)
    if mode == "preload":
        env["LD_PRELOAD"] = args.so
    return env


def run_child(args, world, mode, rnd):
    from run import run_worker  # the client benchmark's: a timeout kills the ranks too
    argv = [args.python, os.path.abspath(__file__), "--worker", "--world", str(world),
            "--mode", mode, "--so", args.so]
    for opt in SIZES:
        v = getattr(args, opt)
        argv += ["--" + opt.replace("_", "-"),
                 str(v * world // args.ranks if opt == "copies" else v)]
    if args.data:
        argv += ["--data", args.data]
    env = child_env(args, mode)
    w = run_worker(argv, env, args.timeout)
    timed_out, err = w["timed_out"], w["err"]
    rec = {"world": world, "mode": mode, "round": rnd, "argv": argv,
           "ld_preload": env.get("LD_PRELOAD"), "rc": w["rc"], "timed_out": timed_out,
           "seconds": w["seconds"], "result": w["objs"][-1] if w["objs"] else None,
           "error": None}
    res = rec["result"]
    if timed_out:
        rec["error"] = f"timed out after {args.timeout:.0f} s"
    elif w["rc"] != 0 or res is None:
        rec["error"] = f"exit {w['rc']}" + ("" if res else ", no result line")
    else:
        mapped = [r["interposer"] for r in res["ranks"]]
        if mode == "preload" and not all(mapped):
            rec["error"] = f"LD_PRELOAD={args.so} but the interposer is not mapped in every rank"
        elif mode == "plain" and any(mapped):
            rec["error"] = f"plain run has the interposer mapped ({mapped})"
    if rec["error"]:
        rec["stderr_tail"] = err[-4000:]
    return rec


def spread(vals):
    if not vals:
        return None, "-"
    return statistics.median(vals), f"[{min(vals):.4g}-{max(vals):.4g}]"


def loss_dev(ref, other):
    """max over epochs of |other - ref| / |ref|."""
    if len(ref) != len(other):
        return float("inf")
    return max((abs(q - p) / max(abs(p), 1e-30) for p, q in zip(ref, other)), default=0.0)


def summarise(args, worlds, runs):
    """Per world size: ms/epoch of each side (a run's ms: its slowest rank's median), the
    speed-up, the loss trajectories of the first good round of each side, the float64 checks."""
    rows = []
    for w in worlds:
        row = {"world": w, "copies_per_rank": args.copies // args.ranks}
        good = {m: [r for r in runs if r["world"] == w and r["mode"] == m and not r["error"]]
                for m in ("plain", "preload")}
        for m, rs in good.items():
            vals = [max(r["result"]["ms"]) for r in rs]
            row[m + "_all"] = vals
            row[m + "_ms"], row[m + "_spread"] = spread(vals)
            errs = [r["result"]["relerr"] for r in rs]
            row[m + "_relerr"] = max(errs) if errs else None
        a, b = row["plain_ms"], row["preload_ms"]
        row["speedup"] = a / b if a and b else None
        row["loss_dev"] = row["plain_noise"] = None
        if good["plain"] and good["preload"]:
            lp = good["plain"][0]["result"]["loss"]
            row["loss_dev"] = loss_dev(lp, good["preload"][0]["result"]["loss"])
            # for reading a failure: how far the plain runs' own trajectories drift apart
            row["plain_noise"] = max(loss_dev(lp, r["result"]["loss"]) for r in good["plain"])
        row["loss_ok"] = row["loss_dev"] is not None and row["loss_dev"] <= args.loss_tol
        row["relerr_ok"] = all(row[m + "_relerr"] is not None and row[m + "_relerr"] <= args.tol
                               for m in ("plain", "preload"))
        row["runs_ok"] = all(len(good[m]) == args.rounds for m in good)
        rows.append(row)
    return rows


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def launcher(args):
    import graphs
    command = shlex.join([sys.executable] + sys.argv)
    print(f"command: cd {shlex.quote(os.getcwd())} && {command}")
    env = child_env(args, "plain")
    try:
        have = int(subprocess.run([args.python, "-c", "import torch; print(torch.cuda."
                                   "device_count())"], env=env, capture_output=True, text=True,
                                  timeout=args.timeout).stdout.split()[-1])
    except (subprocess.SubprocessError, IndexError, ValueError):
        have = 0
    if have < args.ranks:
        print(f"ddp.py: {have} GPU(s) visible, --ranks {args.ranks} needs {args.ranks}: "
              f"not run")
        return 2
    if args.device_check:
        print(f"ddp.py: {have} GPU(s) visible, --ranks {args.ranks}: ok")
        return 0
    args.so = os.path.abspath(args.so)
    if not os.path.isfile(args.so):
        print(f"ddp.py: the interposer {args.so} does not exist: build it (make) or pass --so")
        return 1
    n, indptr, indices = graphs.load(args.graph, args.data, args.cache)  # fills the cache
    cpr = args.copies // args.ranks
    print(f"interposer: {args.so}\ngraph {args.graph}: {n:,} nodes, {indices.size + n:,} "
          f"nonzeros with the self loops; {args.copies} copies, {cpr} per rank "
          f"({cpr * n:,} nodes, {cpr * (indices.size + n):,} nonzeros)")
    worlds = [args.ranks, 1] if args.ranks > 1 else [1]
    runs = []
    for rnd in range(1, args.rounds + 1):
        for w in worlds:
            for mode in ("plain", "preload"):
                rec = run_child(args, w, mode, rnd)
                runs.append(rec)
                res = rec["result"]
                msg = (f"FAILED: {rec['error']}" if rec["error"] else
                       f"ms/epoch per rank {', '.join(f'{v:.4f}' for v in res['ms'])}; "
                       f"relerr {res['relerr']:.2e}")
                print(f"[round {rnd}] world {w} {mode}: {rec['seconds']:.1f} s, {msg}",
                      flush=True)
                if rec["error"]:
                    print("  stderr tail:\n    " + "\n    ".join(
                        rec["stderr_tail"].strip().splitlines()[-25:]), flush=True)
    rows = summarise(args, worlds, runs)
    first = next((r["result"] for r in runs if r["result"]), {})
    print(f"\n{', '.join(first.get('gpus', ['?']))}; torch {first.get('torch')}; features "
          f"{args.features}, hidden {args.hidden}, classes {args.classes}; {args.warmup} "
          f"warm-up + {args.epochs} timed epochs")
    print("ms/epoch: median over rounds of each run's slowest rank's median; [min-max] over "
          "rounds.  x: plain / preload.")
    print(f"loss: max over epochs of |loss_preload - loss_plain| / |loss_plain|, round 1, "
          f"against {args.loss_tol:g} (noise: the same between the plain rounds, for reference);"
          f"\nrelerr: first forward output and loss against float64, worst rank and round, "
          f"against {args.tol:g}")
    hdr = (f"{'world':>5} {'copies/rank':>11} {'plain ms':>9} {'[min-max]':>17} "
           f"{'preload ms':>10} {'[min-max]':>17} {'x':>6} {'loss dev':>9} {'noise':>8} "
           f"{'loss':>5} {'relerr plain/pre':>17} {'f64':>5}  runs")
    print(hdr + "\n" + "-" * len(hdr))
    for r in rows:
        print(f"{r['world']:>5} {r['copies_per_rank']:>11} {fmt(r['plain_ms'], '.4f'):>9} "
              f"{r['plain_spread']:>17} {fmt(r['preload_ms'], '.4f'):>10} "
              f"{r['preload_spread']:>17} {fmt(r['speedup'], '.3f'):>6} "
              f"{fmt(r['loss_dev'], '.2e'):>9} {fmt(r['plain_noise'], '.1e'):>8} "
              f"{'PASS' if r['loss_ok'] else 'FAIL':>5} "
              f"{fmt(r['plain_relerr'], '.1e') + '/' + fmt(r['preload_relerr'], '.1e'):>17} "
              f"{'PASS' if r['relerr_ok'] else 'FAIL':>5}  "
              f"{'ok' if r['runs_ok'] else 'FAIL (a run failed)'}")
    if len(rows) == 2 and rows[0]["speedup"] and rows[1]["speedup"]:
        print(f"\nper-rank speed-up under the interposer: {rows[0]['speedup']:.3f}x with "
              f"{args.ranks} ranks, {rows[1]['speedup']:.3f}x on one GPU (ratio "
              f"{rows[0]['speedup'] / rows[1]['speedup']:.3f})")
    ok = all(r["loss_ok"] and r["relerr_ok"] and r["runs_ok"] for r in rows)
    print("\nall checks PASS" if ok else "\nFAIL")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "cwd": os.getcwd(), "config": vars(args),
                       "graph": {"spec": args.graph, "n": n, "nnz": int(indices.size) + n},
                       "rows": rows, "runs": runs}, f, indent=1)
        print(f"json: {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    a = parse_args()
    sys.exit(worker(a) if a.worker else launcher(a))
