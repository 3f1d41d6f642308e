#!/usr/bin/env python3
"""Client benchmark of the cuSPARSE interposer: real PyTorch / PyG programs (clients.py), plain
and under LD_PRELOAD=libtcsparse_preload.so, in interleaved rounds of separate processes
(plain, preload, plain, preload, ...).  Prints per client and graph the median and spread of
each side, the speed-up, the float64 checks, and the speed-up the sparse products' share of
the plain time allows (Amdahl); --control adds a third side, the interposer passing every call
through, as a measure of the spread between processes; --json FILE keeps everything.
bench/clients/README.md.
"""
import argparse
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import graphs  # noqa: E402

CLIENTS = ["gcn_torch", "gcn_pyg", "gat", "spmm"]
TRAINING = {"gcn_torch", "gcn_pyg", "gat"}
DEFAULT_GRAPHS = ["mtx:cora", "mtx:pubmed", "mtx:ogbl-ddi", "mtx:BlogCatalog",
                  "mtx:NotreDame_www", "diag:PROTEINS_full:64", "chunglu:18:16", "rmat:18:16"]
FULL_GRAPHS = ["mtx:cora", "mtx:citeseer", "mtx:pubmed", "mtx:ogbl-ddi", "mtx:BlogCatalog",
               "mtx:facebook100-MIT8", "mtx:NotreDame_www", "mtx:mdual",
               "diag:PROTEINS_full:64", "chunglu:16:16", "chunglu:18:32", "chunglu:20:16",
               "chunglu:20:50", "rmat:18:16", "rmat:20:16"]
CPU_GRAPHS = ["mtx:cora", "chunglu:12:8", "rmat:12:8"]
NEVER_SLOWER = 0.98   # goal: every client on every graph at least this fast as plain
SPMM_GOAL = 1.5       # goal: torch.sparse.mm at N = 128, geomean on graphs of 500k+ nonzeros
SPMM_GOAL_NNZ = 500_000


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--so", default=None, help="the interposer (default: "
                    "compat/cusparse/.libs/libtcsparse_preload.so of this tree; with --device "
                    "cpu none, and the 'preload' side runs plain)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--graphs", default=None, help="comma-separated graph specs (default: "
                    "the default set; with --device cpu: " + ",".join(CPU_GRAPHS) + ")")
    ap.add_argument("--full", action="store_true", help="the issue's whole graph list, 5 rounds")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per side (default 3; "
                    "--full: 5)")
    ap.add_argument("--isolate", action="store_true", help="one process per client and graph "
                    "(default: one process runs all clients of a graph, one after the other)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiled runs")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per process")
    ap.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                    help="start no process that would end past this many seconds of the run "
                    "(judged by the longest process of its graph so far), and print the table "
                    "of those that ran: for a run under a time limit")
    ap.add_argument("--json", default=None, help="write everything to this file")
    ap.add_argument("--cache", default="/tmp", help="folder of the graphs' .npz cache")
    ap.add_argument("--data", default=None, help="Matrix Market folder (default $TC_DATA_DIR "
                    "or ../shared/data next to the repository)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--tf32", action="store_true", help="preload side with TCSPARSE_MATH=tf32; "
                    "checks accept the TF32 bound")
    ap.add_argument("--preload-env", action="append", default=[], metavar="VAR=VALUE",
                    help="extra environment of the preload side (repeatable)")
    ap.add_argument("--control", action="store_true", help="a third side in every round, after "
                    "the other two: the interposer with TCSPARSE_ROUTE=cusparse (every call "
                    "passed through, at most a fraction of a microsecond each; not profiled, "
                    "--preload-env not applied); its x against plain is the spread between "
                    "processes that tcsparse's decisions play no part in")
    for opt, kind in (("--warmup", int), ("--reps", int), ("--inner", int),
                      ("--profile-iters", int), ("--features", int), ("--hidden", int),
                      ("--classes", int), ("--qk", int), ("--spmm-n", str),
                      ("--index-dtype", str), ("--sparse-kernels", str)):
        ap.add_argument(opt, type=kind, default=None, help="passed to clients.py")
    args = ap.parse_args()
    if args.graphs:
        args.graph_list = [g for g in args.graphs.split(",") if g]
    elif args.full:
        args.graph_list = FULL_GRAPHS
    else:
        args.graph_list = CPU_GRAPHS if args.device == "cpu" else DEFAULT_GRAPHS
    args.rounds = args.rounds or (5 if args.full else 3)
    args.sides = ("plain", "preload", "passthru") if args.control else ("plain", "preload")
    args.client_list = [c for c in args.clients.split(",") if c]
    unknown = [c for c in args.client_list if c not in CLIENTS]
    if unknown:
        ap.error(f"unknown client(s) {unknown}; known: {CLIENTS}")
    if args.so is None and args.device == "cuda":
        args.so = os.path.join(REPO, "compat", "cusparse", ".libs", "libtcsparse_preload.so")
    if args.so is not None:
        args.so = os.path.abspath(args.so)
        if not os.path.isfile(args.so):
            sys.exit(f"run.py: the interposer {args.so} does not exist: build it (make) or "
                     f"pass --so PATH; refusing to run a benchmark without it")
    for item in args.preload_env:
        if "=" not in item:
            ap.error(f"--preload-env {item}: expected VAR=VALUE")
    return args


def worker_argv(args, spec, clients, side, profile):
    argv = [args.python, os.path.join(HERE, "clients.py"), "--graph", spec,
            "--clients", ",".join(clients), "--device", args.device, "--side", side,
            "--cache", args.cache]
    if args.data:
        argv += ["--data", args.data]
    for opt in ("warmup", "reps", "inner", "profile_iters", "features", "hidden", "classes",
                "qk", "spmm_n", "index_dtype", "sparse_kernels"):
        v = getattr(args, opt)
        if v is not None:
            argv += ["--" + opt.replace("_", "-"), str(v)]
    if args.tf32:
        argv.append("--tf32")
    if profile:
        argv.append("--profile")
    return argv


def side_env(args, side):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if side == "passthru" and args.so:
        env["LD_PRELOAD"] = args.so
        env["TCSPARSE_ROUTE"] = "cusparse"
    if side == "preload" and args.so:
        env["LD_PRELOAD"] = args.so
        if args.tf32:
            env["TCSPARSE_MATH"] = "tf32"
        for item in args.preload_env:
            k, _, v = item.partition("=")
            env[k] = v
    return env


def run_worker(argv, env, timeout):
    """Runs a worker process in a session of its own, so that a timeout kills its whole
    process group (the ranks it started too).  Returns its return code, stdout, stderr,
    whether it timed out, its seconds, and the JSON objects of its stdout lines starting
    with '{'."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    objs = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                objs.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return {"rc": proc.returncode, "out": out, "err": err, "timed_out": timed_out,
            "seconds": round(time.perf_counter() - t0, 2), "objs": objs}


def run_process(args, spec, clients, side, rnd, profile):
    """One worker process; its JSON lines, or errors for the clients it did not report."""
    argv = worker_argv(args, spec, clients, side, profile)
    env = side_env(args, side)
    w = run_worker(argv, env, args.timeout)
    err, timed_out = w["err"], w["timed_out"]
    rec = {"graph": spec, "side": side, "round": rnd, "profile": profile, "clients": clients,
           "argv": argv, "ld_preload": env.get("LD_PRELOAD"), "rc": w["rc"],
           "timed_out": timed_out, "seconds": w["seconds"], "lines": w["objs"]}
    seen = {r.get("client") for r in rec["lines"]}
    why = (f"timed out after {args.timeout:.0f} s" if timed_out
           else f"exit {w['rc']}, no result line")
    tail = err.strip().splitlines()[-1][:200] if err.strip() else ""
    for c in clients:
        if c not in seen:
            rec["lines"].append({"client": c, "graph": spec, "side": side, "ok": False,
                                 "error": why + (f": {tail}" if tail else "")})
    if rec["lines"] and any(not r.get("ok") for r in rec["lines"]):
        rec["stderr_tail"] = err[-3000:]
    # the interposer must be mapped exactly where LD_PRELOAD names it
    for r in rec["lines"]:
        if "interposer" not in r:
            continue
        if env.get("LD_PRELOAD") and not r["interposer"]:
            r["ok"] = False
            r["error"] = f"LD_PRELOAD={env['LD_PRELOAD']} but the interposer is not mapped"
        elif not env.get("LD_PRELOAD") and r["interposer"]:
            r["ok"] = False
            r["error"] = f"plain run has the interposer mapped ({r['interposer']})"
    return rec


def estimate_seconds(args, nnz, clients, profile):
    """A rough guess of one process's duration: start-up (import, CUDA context) plus, per
    client, set-up and check plus its iterations at a rate proportional to nnz."""
    start = 5.0 + (2.0 if "gcn_pyg" in clients else 0.0)
    per_mnnz = {"gcn_torch": 0.15, "gcn_pyg": 0.15, "gat": 0.25, "spmm": 0.25}
    work = sum(1.0 + per_mnnz[c] * nnz / 1e6 for c in clients)
    return start + work * (1.3 if profile else 1.0)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def amdahl(s, r):
    return 1.0 / ((1.0 - s) + s / r)


def aggregate(args, procs, graph_info):
    """Rows keyed by (client, measurement, graph), in run order."""
    rows = {}
    for p in procs:
        for line in p["lines"]:
            ms = line.get("measurements") or [{"name": line["client"]}]
            for m in ms:
                key = (line["client"], m["name"], line["graph"])
                row = rows.setdefault(key, {
                    "client": line["client"], "measurement": m["name"], "graph": line["graph"],
                    "unit": m.get("unit"), "nodes": graph_info.get(line["graph"], {}).get("n"),
                    "nnz": graph_info.get(line["graph"], {}).get("nnz"),
                    "plain": [], "preload": [], "passthru": [], "errors": [], "notes": [],
                    "check_max": {"plain": None, "preload": None, "passthru": None},
                    "profile": {}})
                side = line["side"]
                row["unit"] = row["unit"] or m.get("unit")
                if line.get("nnz"):
                    row["nnz"] = line["nnz"]
                if line.get("ok") and "ms" in m:
                    row[side].append(m["ms"])
                else:
                    row["errors"].append(f"{side} r{p['round']}: " + (
                        line.get("error") or f"check {line.get('check_max'):.3g} > "
                        f"{line.get('tol')}: {line.get('check')}"))
                if line.get("check_max") is not None:
                    cm = row["check_max"][side]
                    row["check_max"][side] = max(cm, line["check_max"]) if cm is not None \
                        else line["check_max"]
                for note in line.get("notes", []):
                    if note not in row["notes"]:
                        row["notes"].append(note)
                if "profile" in m and line.get("ok"):
                    row["profile"][side] = m["profile"]
    out = []
    for row in rows.values():
        for side in ("plain", "preload", "passthru"):
            v = row[side]
            row[side + "_ms"] = statistics.median(v) if v else None
            row[side + "_min"] = min(v) if v else None
            row[side + "_max"] = max(v) if v else None
        a, b = row["plain_ms"], row["preload_ms"]
        row["speedup"] = a / b if a and b else None
        row["control"] = a / row["passthru_ms"] if a and row["passthru_ms"] else None
        pp, pq = row["profile"].get("plain"), row["profile"].get("preload")
        row["share"] = row["r"] = row["allowed"] = row["of_allowed"] = None
        if pp and pq and a and pp["sparse_ms"] > 0 and pq["sparse_ms"] > 0:
            # s: the plain run's sparse-kernel time per iteration over its wall time
            row["share"] = min(pp["sparse_ms"] / a, 1.0)
            row["r"] = pp["sparse_ms"] / pq["sparse_ms"]
            row["allowed"] = amdahl(row["share"], row["r"])
            if row["speedup"]:
                row["of_allowed"] = row["speedup"] / row["allowed"]
        short = [f"{s} {len(row[s])}" for s in args.sides if len(row[s]) != args.rounds]
        if short and not row["errors"]:
            row["errors"].append(f"rounds run of {args.rounds}: " + ", ".join(short))
        row["ok"] = not row["errors"]
        out.append(row)
    return out


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def print_table(args, rows):
    print()
    print("ms: median over rounds of each process's median; [min-max] over rounds.  x: plain "
          "median / preload median.")
    print("s: share of the plain time in sparse-product kernels; r: their speed-up (plain / "
          "preload kernel time); allowed = 1/((1-s)+s/r); ach/all = x / allowed.")
    print("err: largest relative error against float64 over the rounds (plain / preload).")
    ctl = args.control
    if ctl:
        print("ctl: plain median / median of the pass-through side (the interposer with "
              "TCSPARSE_ROUTE=cusparse): the processes' own spread.")
    hdr = (f"{'client':<10} {'graph':<22} {'nnz':>10} {'plain ms':>9} {'[min-max]':>19} "
           f"{'preload ms':>10} {'[min-max]':>19} {'x':>6} {'   ctl ' if ctl else ''}"
           f"{'s':>5} {'r':>6} {'allowed':>7} "
           f"{'ach/all':>7} {'err':>17}  status")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        name = r["measurement"]
        spread = {s: (f"[{fmt(r[s + '_min'], '.4g')}-{fmt(r[s + '_max'], '.4g')}]"
                      if r[s + "_ms"] is not None else "-") for s in ("plain", "preload")}
        err = f"{fmt(r['check_max']['plain'], '.1e')}/{fmt(r['check_max']['preload'], '.1e')}"
        status = "ok" if r["ok"] else "FAIL " + "; ".join(r["errors"])[:300]
        if r["ok"] and r["speedup"] is not None and r["speedup"] < NEVER_SLOWER:
            status = f"slower than {NEVER_SLOWER}x"
        if r["notes"]:
            status += " (" + "; ".join(r["notes"]) + ")"
        print(f"{name:<10} {r['graph'][:22]:<22} {fmt(r['nnz'], 'd'):>10} "
              f"{fmt(r['plain_ms'], '.4f'):>9} {spread['plain']:>19} "
              f"{fmt(r['preload_ms'], '.4f'):>10} {spread['preload']:>19} "
              f"{fmt(r['speedup'], '.3f'):>6} "
              f"{(format(fmt(r.get('control'), '.3f'), '>6') + ' ') if ctl else ''}"
              f"{fmt(r['share'], '.2f'):>5} "
              f"{fmt(r['r'], '.3f'):>6} {fmt(r['allowed'], '.3f'):>7} "
              f"{fmt(r['of_allowed'], '.3f'):>7} {err:>17}  {status}")


def goals(rows):
    done = [r for r in rows if r["speedup"] is not None]
    slower = [f"{r['measurement']}@{r['graph']} {r['speedup']:.3f}x"
              + (f" (pass-through {r['control']:.3f}x)" if r.get("control") else "")
              for r in done if r["speedup"] < NEVER_SLOWER]
    big = [r for r in done if r["measurement"] == "spmm_n128" and (r["nnz"] or 0) >= SPMM_GOAL_NNZ]
    gm = geomean([r["speedup"] for r in big])
    return {
        "never_slower": {"threshold": NEVER_SLOWER, "rows": len(done), "slower": slower,
                         "met": bool(done) and not slower},
        "spmm_n128_geomean": {"goal": SPMM_GOAL, "min_nnz": SPMM_GOAL_NNZ, "value": gm,
                              "graphs": [r["graph"] for r in big],
                              "met": gm is not None and gm >= SPMM_GOAL},
        "failed_rows": [f"{r['measurement']}@{r['graph']}" for r in rows if not r["ok"]],
    }


def print_goals(g):
    ns, sp = g["never_slower"], g["spmm_n128_geomean"]
    print()
    print(f"goal never slower (every row >= {ns['threshold']}x): "
          f"{'met' if ns['met'] else 'NOT met'} ({len(ns['slower'])} of {ns['rows']} rows below"
          f"{': ' + ', '.join(ns['slower']) if ns['slower'] else ''})")
    print(f"goal spmm N=128 geomean >= {sp['goal']}x on graphs of {sp['min_nnz']:,}+ nonzeros: "
          f"{fmt(sp['value'], '.3f')} over {len(sp['graphs'])} graphs "
          f"({'met' if sp['met'] else 'NOT met'})")
    if g["failed_rows"]:
        print(f"failed rows: {len(g['failed_rows'])}: {', '.join(g['failed_rows'])}")


def print_kernels(rows):
    """What the sparse-kernel pattern matched (and the cuSPARSE kernels it left out), summed
    over all profiled rows, ms per iteration."""
    for side in ("plain", "preload"):
        hit, miss = {}, {}
        for r in rows:
            p = r["profile"].get(side)
            if not p:
                continue
            for name, _, ms in p["matched"]:
                hit[name] = hit.get(name, 0.0) + ms
            for name, ms in p["unmatched_cusparse"]:
                miss[name] = miss.get(name, 0.0) + ms
        if not hit and not miss:
            continue
        print(f"\nsparse-product kernels matched in the {side} profiles (ms per iteration, "
              f"summed over rows):")
        for name, ms in sorted(hit.items(), key=lambda x: -x[1]):
            print(f"  {ms:10.4f}  {name}")
        if miss:
            print("  not matched, name contains 'cusparse':")
            for name, ms in sorted(miss.items(), key=lambda x: -x[1]):
                print(f"  {ms:10.4f}  {name}")


def main():
    args = parse_args()
    command = shlex.join([sys.executable] + sys.argv)
    print(f"command: cd {shlex.quote(os.getcwd())} && {command}")
    print(f"interposer: {args.so or 'none (--device cpu: every side runs plain)'}")
    layout = "one process per client and graph" if args.isolate else \
        "one process per graph and round"
    profiles = "no profiles" if args.no_profile else \
        "round 1 of plain and preload profiled after its timing"
    print(f"device {args.device}; clients {','.join(args.client_list)}; {args.rounds} rounds "
          f"per side; {layout}; {profiles}")
    started = time.time()

    graph_info = {}
    for spec in args.graph_list:
        t0 = time.perf_counter()
        try:
            n, indptr, indices = graphs.load(spec, args.data, args.cache)
            graph_info[spec] = {"n": n, "edges": int(indices.size),
                                "nnz": int(indices.size) + n,  # G + I
                                "prepare_s": round(time.perf_counter() - t0, 2)}
            print(f"graph {spec}: {n:,} nodes, {graph_info[spec]['nnz']:,} nonzeros with the "
                  f"self loops ({graph_info[spec]['prepare_s']} s)")
        except Exception as e:
            graph_info[spec] = {"error": f"{type(e).__name__}: {e}"}
            print(f"graph {spec}: FAILED: {graph_info[spec]['error']}")

    jobs = []  # (spec, clients, round, side, profile)
    for spec in args.graph_list:
        if "error" in graph_info[spec]:
            continue
        groups = [[c] for c in args.client_list] if args.isolate else [args.client_list]
        for clients in groups:
            for rnd in range(1, args.rounds + 1):
                for side in args.sides:
                    jobs.append((spec, clients, rnd, side,
                                 rnd == 1 and side != "passthru" and not args.no_profile))
    est = [estimate_seconds(args, graph_info[j[0]]["nnz"], j[1], j[4]) for j in jobs]
    print(f"{len(jobs)} processes, estimated {sum(est) / 60:.1f} min (a guess from the sizes; "
          f"the progress lines show the real pace), timeout {args.timeout:.0f} s each")
    sys.stdout.flush()

    procs = []
    done_est = 0.0
    t_run = time.perf_counter()
    longest = {}  # graph -> seconds of its longest process so far
    for i, (job, e) in enumerate(zip(jobs, est)):
        spec, clients, rnd, side, profile = job
        if args.deadline is not None:
            ahead = longest.get(spec, e)
            if time.time() - started + ahead > args.deadline:
                print(f"deadline: {len(jobs) - i} of {len(jobs)} processes not started "
                      f"(the next would need about {ahead:.0f} s more than the "
                      f"{args.deadline:.0f} s allow)", flush=True)
                break
        p = run_process(args, spec, clients, side, rnd, profile)
        longest[spec] = max(longest.get(spec, 0.0), p["seconds"])
        procs.append(p)
        done_est += e
        elapsed = time.perf_counter() - t_run
        eta = elapsed / done_est * (sum(est) - done_est)
        bad = [r["client"] for r in p["lines"] if not r.get("ok")]
        print(f"[{i + 1}/{len(jobs)}] {spec} {side} round {rnd}{' +profile' if profile else ''}"
              f" {','.join(clients)}: {p['seconds']:.1f} s"
              f"{'  FAILED: ' + ','.join(bad) if bad else ''}; elapsed {elapsed / 60:.1f} min,"
              f" about {eta / 60:.1f} min left", flush=True)

    rows = aggregate(args, procs, graph_info)
    for spec, info in graph_info.items():
        if "error" in info:
            for c in args.client_list:
                rows.append({"client": c, "measurement": c, "graph": spec, "nnz": None,
                             "ok": False, "errors": [f"graph: {info['error']}"], "notes": [],
                             "plain_ms": None, "preload_ms": None, "passthru_ms": None,
                             "control": None, "plain_min": None,
                             "plain_max": None, "preload_min": None, "preload_max": None,
                             "speedup": None, "share": None, "r": None, "allowed": None,
                             "of_allowed": None,
                             "check_max": {"plain": None, "preload": None, "passthru": None},
                             "profile": {}})
    first = next((ln for p in procs for ln in p["lines"] if ln.get("torch")), {})
    pyg = next((ln["pyg"] for p in procs for ln in p["lines"] if ln.get("pyg")), None)
    print(f"\n{first.get('gpu') or args.device}; torch {first.get('torch')}; "
          f"torch_geometric {pyg}; sizes: features {args.features or 128}, "
          f"hidden {args.hidden or 256}, classes {args.classes or 64}, gat qk {args.qk or 64}")
    print_table(args, rows)
    g = goals(rows)
    print_goals(g)
    print_kernels(rows)
    print(f"\ntotal {(time.time() - started) / 60:.1f} min")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "cwd": os.getcwd(), "started": started,
                       "config": {k: v for k, v in vars(args).items()},
                       "graphs": graph_info, "rows": rows, "goals": g, "processes": procs},
                      f, indent=1)
        print(f"json: {args.json}")
    return 0 if not g["failed_rows"] else 1


if __name__ == "__main__":
    sys.exit(main())
