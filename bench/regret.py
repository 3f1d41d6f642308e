#!/usr/bin/env python3
"""Measured regret of the automatic route, from tcsparse-bench CSV files.

usage: regret.py [--min-nnz K] [--worst W] FILE.csv [FILE.csv ...]

For every (input, N, precision) with at least K nonzeros (default 10000), the regret is the
routed time divided by the best of the forced tensor-core kernels (base, balanced) and
cuSPARSE ALG_DEFAULT, all timed in the same run.  tcsparse-bench-sddmm's CSV files work too
(K in place of N, cusparseSDDMM in place of ALG_DEFAULT).  Prints the share of cases within 1.05 and
1.15, the worst case, the W worst cases (default 10), and the median host overhead of the
routed call over the path it took (routed time minus that path's own time; a route to
cuSPARSE CSR_ALG3 against the cusparse-alg3 row), and, where the CSV has them, how many calls
the route spent measuring its candidates before it settled.  Where the runs have CSR_ALG3 rows it
also prints the routed time against the best cuSPARSE algorithm (ALG_DEFAULT or CSR_ALG3)
and the speed-up over ALG_DEFAULT (geomeans)."""
import csv, math, statistics, sys


def main(argv):
    min_nnz, worst, files = 10000, 10, []
    i = 0
    while i < len(argv):
        if argv[i] == '--min-nnz':
            min_nnz, i = int(argv[i + 1]), i + 2
        elif argv[i] == '--worst':
            worst, i = int(argv[i + 1]), i + 2
        elif argv[i].startswith('-'):
            sys.exit(__doc__)
        else:
            files.append(argv[i])
            i += 1
    if not files:
        sys.exit(__doc__)
    runs, nnz, explore = {}, {}, {}
    for f in files:
        with open(f) as fh:
            for r in csv.DictReader(fh):
                # tcsparse-bench-sddmm's rows: K for N, "cusparse" for cusparseSDDMM
                key = (r['input'].split('/')[-1], int(r['N'] if 'N' in r else r['K']), r['prec'])
                variant = 'cusparse-default' if r['variant'] == 'cusparse' else r['variant']
                runs.setdefault(key, {})[variant] = (float(r['ms']), r['route'])
                nnz[key] = int(r['nnz'])
                if variant == 'routed' and r.get('explore_calls') not in (None, ''):
                    explore[key] = int(r['explore_calls'])
    cases, overhead = [], {'cuSPARSE': [], 'cuSPARSE CSR_ALG3': [], 'TC base': [], 'TC balanced': []}
    vs_best_cu, vs_default = [], []
    for key, v in sorted(runs.items()):
        need = ('routed', 'tc-base', 'tc-balanced', 'cusparse-default')
        if nnz[key] < min_nnz or any(n not in v for n in need):
            continue
        routed, route = v['routed']
        best = min(v['tc-base'][0], v['tc-balanced'][0], v['cusparse-default'][0])
        cases.append((routed / best, key, route))
        if 'cusparse-alg3' in v:
            vs_best_cu.append(routed / min(v['cusparse-default'][0], v['cusparse-alg3'][0]))
            vs_default.append(v['cusparse-default'][0] / routed)
        if 'CSR_ALG3' in route and 'cusparse-alg3' in v:
            overhead['cuSPARSE CSR_ALG3'].append(routed - v['cusparse-alg3'][0])
        elif route.startswith('cusparse'):
            overhead['cuSPARSE'].append(routed - v['cusparse-default'][0])
        elif route.endswith('_balanced'):
            overhead['TC balanced'].append(routed - v['tc-balanced'][0])
        else:
            overhead['TC base'].append(routed - v['tc-base'][0])
    if not cases:
        sys.exit('regret.py: no complete case in the files')
    n = len(cases)
    a = sum(1 for c in cases if c[0] <= 1.05)
    b = sum(1 for c in cases if c[0] <= 1.15)
    print('%d cases: %d (%.1f%%) within 1.05, %d (%.1f%%) within 1.15, worst %.2f'
          % (n, a, 100.0 * a / n, b, 100.0 * b / n, max(cases)[0]))
    for path, d in overhead.items():
        if d:
            print('  routed - direct, route %s: median %.2f us over %d cases'
                  % (path, 1000.0 * statistics.median(d), len(d)))
    if vs_best_cu:
        geo = lambda x: math.exp(sum(math.log(t) for t in x) / len(x))
        print('  routed / best cuSPARSE (ALG_DEFAULT, CSR_ALG3): geomean %.3f, %d of %d <= 1.00; '
              'speed-up over ALG_DEFAULT: geomean %.2f'
              % (geo(vs_best_cu), sum(1 for t in vs_best_cu if t <= 1.0), len(vs_best_cu),
                 geo(vs_default)))
    ex = [explore[c[1]] for c in cases if c[1] in explore]
    if ex:
        print('  calls measuring the paths before the route settled (tcsparse-bench): median %d, '
              'max %d, none in %d of %d cases' % (statistics.median(ex), max(ex),
                                                  sum(1 for e in ex if e == 0), len(ex)))
    for r, key, route in sorted(cases, reverse=True)[:worst]:
        print('  %.2f  %s N=%d %s -> %s' % (r, key[0], key[1], key[2], route))


if __name__ == '__main__':
    main(sys.argv[1:])
