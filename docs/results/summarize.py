#!/usr/bin/env python3
"""Summarises tcsparse-bench / tcsparse-bench-sddmm CSV files into the tables of
docs/performance.md.
usage: summarize.py large|small|f16|sddmm FILE.csv"""
import csv, collections, math, sys

def load(path):
    d = collections.defaultdict(dict)
    for r in csv.DictReader(open(path)):
        name = r['input'].split('/')[-1].replace('.mtx.gz', '')
        d[(name, int(r['N'] if 'N' in r else r['K']), r['prec'])][r['variant']] = r
    return d

def ms(v, n):
    return float(v[n]['ms']) if n in v else float('nan')

def geo(xs):
    xs = [x for x in xs if x == x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float('nan')

mode, path = sys.argv[1], sys.argv[2]
d = load(path)
order = []
for k in d:
    if k[0] not in order:
        order.append(k[0])
if mode == 'sddmm':
    for prec in ('tf32', 'f32'):
        for K in sorted({k[1] for k in d if k[2] == prec}):
            print(f"\n**{prec}, K = {K}** (ms; speed-up = cusparseSDDMM time / time)\n")
            print("| matrix | nnz | nnz/block | cusparseSDDMM | TC base | TC balanced | routed (path) | TC best ÷ cuSPARSE | routed ÷ cuSPARSE |")
            print("|---|---|---|---|---|---|---|---|---|")
            r1, r2 = [], []
            for name in order:
                v = d.get((name, K, prec))
                if not v:
                    continue
                cu = ms(v, 'cusparse')
                tc = min(ms(v, 'tc-base'), ms(v, 'tc-balanced'))
                ro = ms(v, 'routed')
                r1.append(cu / tc); r2.append(cu / ro)
                rr = v['routed']
                path_ = 'TC' if rr['route'].startswith('tc_') else 'cuSP'
                print(f"| {name} | {int(rr['nnz']):,} | {float(rr['nnz_per_block']):.2f} | {cu:.3f} | {ms(v,'tc-base'):.3f} | {ms(v,'tc-balanced'):.3f} | {ro:.3f} ({path_}) | {cu/tc:.2f} | {cu/ro:.2f} |")
            print(f"| **geomean** | | | | | | | **{geo(r1):.2f}** | **{geo(r2):.2f}** |")
elif mode in ('large', 'f16'):
    precs = sorted({k[2] for k in d}, key=lambda p: ['tf32', 'f32', 'f16', 'bf16'].index(p))
    for prec in precs:
        for N in sorted({k[1] for k in d if k[2] == prec}):
            print(f"\n**{prec}, N = {N}** (ms; speed-up = cuSPARSE ALG_DEFAULT time / time)\n")
            print("| matrix | nnz | nnz/block | conv ms | cuSP default | CSR_ALG3 | TC base | TC balanced | routed | TC best ÷ default | TC best ÷ best cuSPARSE |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            r1, r2 = [], []
            for name in order:
                v = d.get((name, N, prec))
                if not v:
                    continue
                dflt = ms(v, 'cusparse-default')
                best = min(ms(v, 'cusparse-default'), ms(v, 'cusparse-alg2'), ms(v, 'cusparse-alg3'))
                tc = min(ms(v, 'tc-base'), ms(v, 'tc-balanced'))
                r1.append(dflt / tc); r2.append(best / tc)
                rr = v['routed']
                print(f"| {name} | {int(rr['nnz']):,} | {float(rr['nnz_per_block']):.2f} | {float(rr['convert_ms']):.2f} | {dflt:.3f} | {ms(v,'cusparse-alg3'):.3f} | {ms(v,'tc-base'):.3f} | {ms(v,'tc-balanced'):.3f} | {ms(v,'routed'):.3f} | {dflt/tc:.2f} | {best/tc:.2f} |")
            print(f"| **geomean** | | | | | | | | | **{geo(r1):.2f}** | **{geo(r2):.2f}** |")
else:
    for prec in ('tf32', 'f32'):
        if not any(k[2] == prec for k in d):
            continue
        print(f"\n**{prec}** (µs; routed ÷ ALG_DEFAULT and routed ÷ best cuSPARSE, per N)\n")
        Ns = sorted({k[1] for k in d if k[2] == prec})
        print("| matrix | nnz | " + " | ".join(f"N={n}: default / ALG3 / routed (path)" for n in Ns) + " |")
        print("|---|---|" + "---|" * len(Ns))
        rd, rb = collections.defaultdict(list), collections.defaultdict(list)
        for name in order:
            cells = []
            nnz = None
            for N in Ns:
                v = d.get((name, N, prec))
                if not v:
                    cells.append(''); continue
                nnz = v['routed']['nnz']
                dflt = ms(v, 'cusparse-default'); a3 = ms(v, 'cusparse-alg3'); ro = ms(v, 'routed')
                best = min(dflt, ms(v, 'cusparse-alg2'), a3)
                rd[N].append(ro / dflt); rb[N].append(ro / best)
                path_ = 'TC' if v['routed']['route'].startswith('tc_') else 'cuSP'
                cells.append(f"{dflt*1e3:.1f} / {a3*1e3:.1f} / {ro*1e3:.1f} ({path_})")
            print(f"| {name} | {int(nnz):,} | " + " | ".join(cells) + " |")
        for N in Ns:
            wins = sum(1 for x in rb[N] if x <= 1.0)
            print(f"\nN={N}: routed ÷ default geomean {geo(rd[N]):.3f}, routed ÷ best cuSPARSE geomean {geo(rb[N]):.3f}; routed ≤ best cuSPARSE on {wins}/{len(rb[N])}")
