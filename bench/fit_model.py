#!/usr/bin/env python3
"""Refits the selector's cost model (src/route/select.c) to one GPU's measurements in docs/results.

usage: fit_model.py [--build DIR] [--data DIR] [--update] [--compiled] [--threshold T]
                    [--margin M] [--alg3-max-us U] [--alg3-margin A] [-v]
                    [--arch CC --gpu TEXT --sm N --spmm-files F,... --sddmm-files F,...]

  --build DIR   build directory holding bench/tcsparse-select-features and
                tools/tcsparse-inspect (default: the current directory)
  --data DIR    the shared matrices ($DATA/ of the suites; default $TC_DATA_DIR, else
                ../shared/data next to the source tree)
  --update      rewrite the coefficient block of src/route/select.c in place (else print it)
  --compiled    evaluate the coefficients in src/route/select.c on the data instead of fitting
  --threshold   balance threshold to evaluate (default: the one compiled in, read from
                src/route/select.h)
  --margin      gain margin to evaluate (default: TC_SEL_GAIN_MARGIN and _SDDMM of
                src/route/select.h)
  --alg3-max-us, --alg3-margin
                the cuSPARSE route's CSR_ALG3 rule to evaluate (default: TC_SEL_ALG3_MAX_US
                and TC_SEL_ALG3_MARGIN of src/route/select.h)
  --arch CC     the GPU's compute capability x 10, the coefficient set fitted, evaluated
                (--compiled) or rewritten (--update); the other sets are kept (default 90)
  --gpu TEXT    the set's description (default: "H100 80GB HBM3, 132 SMs" for 90)
  --sm N        the GPU's SMs, for the schedule simulation's features (default 132)
  --spmm-files, --sddmm-files
                the result files (in docs/results) of that GPU, comma separated (default:
                the H100's, listed below); every run in them is taken as made with the
                current kernels

Steps: (1) the ME-TCF statistics of every input of the CSV files, computed on the CPU by
tcsparse-inspect and cached in bench/stats.csv (inputs already there are not recomputed);
(2) the selector's features for every (input, N or K, precision), from the selector's own C
code (bench/tcsparse-select-features, so the features cannot drift from the library's);
(3) non-negative relative least squares per coefficient set; (4) a sweep of the balance
threshold and the regret of the model's routing: routed time / min(TC base, TC balanced,
cuSPARSE ALG_DEFAULT), computed offline from the measured times.
Pure Python 3 (no numpy needed)."""
import csv, math, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
RESULTS = os.path.join(SRC, 'docs', 'results')
STATS = os.path.join(HERE, 'stats.csv')

# Oldest first: a key (input, N, precision) is taken from the newest file that has it, all of
# its variants from that one run.  The *-atomics files were measured after the balanced
# kernel's vector atomics; balanced times of keys only in older files are stale and are kept
# out of the balanced kernel's fit (they still count, pessimistically, in the regret).
SPMM_FILES = ['large-h100.csv', 'small-h100.csv', 'large-f16-h100.csv',
              'large-measure-h100.csv', 'small-measure-h100.csv',
              'large-atomics-h100.csv', 'small-atomics-h100.csv',
              'sel-large-h100.csv', 'sel-large-rest-h100.csv', 'sel-large-f16-h100.csv',
              'sel-small-h100.csv', 'sel-small-f16-h100.csv',
              'sel2-large-h100.csv', 'sel2-small-h100.csv', 'sel2-small-f16-h100.csv',
              'sel3-small-h100.csv', 'sel5-large-h100.csv', 'sel5-small-h100.csv',
              'sel5-small-f16-h100.csv', 'routed-large-s6-h100.csv', 'routed-small-s6-h100.csv']
# Plain TF32 at 96 <= N <= 320 runs the pipelined SpMM kernel on
# short windows (kernels/spmm/spmm_launch.cu, pipe_wanted): those cases are taken only from
# the runs made with that rule.
SPMM_PIPE_RULE = {'routed-large-s6-h100.csv', 'routed-small-s6-h100.csv'}
SPMM_CURRENT_BALANCED = {'routed-large-s6-h100.csv', 'routed-small-s6-h100.csv','sel5-large-h100.csv', 'sel5-small-h100.csv', 'sel5-small-f16-h100.csv',
                         'sel2-large-h100.csv', 'sel2-small-h100.csv',
                         'sel2-small-f16-h100.csv', 'sel3-small-h100.csv',
                         'large-atomics-h100.csv', 'small-atomics-h100.csv',
                         'sel-large-h100.csv', 'sel-large-rest-h100.csv',
                         'sel-large-f16-h100.csv', 'sel-small-h100.csv', 'sel-small-f16-h100.csv'}
# The SDDMM kernel is the pipelined form: only the runs of that form count.
# (sddmm-large-h100.csv, sddmm-small-h100.csv, sddmm-small-rule-h100.csv: the previous kernel.)
SDDMM_FILES = ['sddmm-pipe-large-h100.csv', 'sddmm-pipe-small-h100.csv']

ALG3_MARGIN = 1.0  # overridden by --alg3-margin; src/route/select.h TC_SEL_ALG3_MARGIN
ALG3_MAX_US = 60.0  # --alg3-max-us; src/route/select.h TC_SEL_ALG3_MAX_US
PREC = {'f32': 0, 'tf32': 1, 'f16': 2, 'bf16': 2}
SM = 132
NX, NY = 8, 6


def norm_input(name):
    """Suite spelling of an input: $DATA/X.mtx.gz for the shared matrices."""
    return re.sub(r'/[^:]*/data/', '$DATA/', name)


def load_runs(files, kdim):
    runs = {}
    for f in files:
        path = os.path.join(RESULTS, f)
        if not os.path.exists(path):
            continue
        per = {}
        for r in csv.DictReader(open(path)):
            key = (norm_input(r['input']), int(r[kdim]), r['prec'])
            per.setdefault(key, {})[r['variant']] = float(r['ms']) * 1e3  # us
        for key, v in per.items():
            if (kdim == 'N' and f not in SPMM_PIPE_RULE and key[2] == 'tf32' and
                    96 <= key[1] <= 320):
                continue
            runs[key] = (f, v)
    return runs


def load_stats():
    stats = {}
    if os.path.exists(STATS):
        for r in csv.DictReader(open(STATS)):
            stats[r['input']] = r
    return stats


def compute_stats(inputs, build, data):
    inspect = os.path.join(build, 'tools', 'tcsparse-inspect')
    stats = load_stats()
    missing = [i for i in inputs if i not in stats]
    if not missing:
        return stats
    if not os.access(inspect, os.X_OK):
        sys.exit('fit_model.py: %s not built (run make), needed for %d inputs' % (inspect, len(missing)))
    for name in missing:
        sys.stderr.write('statistics of %s ...\n' % name)
        arg = name.replace('$DATA', data)
        out = subprocess.run([inspect, '--csv', arg], check=True, capture_output=True, text=True).stdout
        rows = list(csv.DictReader(out.splitlines()))
        rows[0]['input'] = name
        stats[name] = rows[0]
    keys = []  # every column of every row, in order of appearance: cached rows may come
    for r in stats.values():  # from a tcsparse-inspect that printed fewer columns
        keys += [k for k in r if k not in keys]
    with open(STATS, 'w', newline='') as fh:
        w = csv.DictWriter(fh, fieldnames=keys, restval='', lineterminator='\n')
        w.writeheader()
        for name in sorted(stats):
            w.writerow(stats[name])
    return stats


def spmm_shape(N, ab):
    """warps per thread block and slices along N (kernels/spmm/spmm_launch.cu, cta_warps)."""
    warp_n = 8 * (4 if ab == 4 else 8)
    warps = max(1, min(4, -(-N // warp_n)))
    return warps, -(-N // (warp_n * warps))


def config_line(op, key, st):
    inp, N, prec = key
    p = PREC[prec]
    ab = 2 if p == 2 else 4
    cb = 2 if p == 2 else 4   # the FP16 runs keep C in FP16
    warps, slices = spmm_shape(N, ab) if op == 0 else (4, 1)
    hist = [st[k] for k in st if k.startswith('bpw_')]
    vals = [op, p, N, ab, cb, SM, 0, 0, warps, slices, 0,
            st['rows'], st['cols'], st['nnz'], st['windows'], st['empty_windows'], st['blocks'],
            st['max_blocks_per_window'], st['metcf_bytes'], st['csr_bytes']] + hist
    return ' '.join(str(int(float(v))) for v in vals)


def features(build, lines, arch):
    exe = os.path.join(build, 'bench', 'tcsparse-select-features')
    out = subprocess.run([exe, str(arch)], input='\n'.join(lines) + '\n', check=True, capture_output=True,
                         text=True).stdout.split('\n')
    res = []
    for l in out:
        if not l.strip():
            continue
        v = [float(x) for x in l.split()]
        res.append({'mk_base': v[0], 'mk_bal': v[1], 'ratio': v[4], 'balanced': int(v[5]),
                    'xb': v[6:6 + NX], 'xl': v[6 + NX:6 + 2 * NX],
                    'y': v[6 + 2 * NX:6 + 2 * NX + NY],
                    'c_pred': v[6 + 2 * NX + NY:6 + 2 * NX + NY + 3]})
    return res


# ---- non-negative least squares (Lawson-Hanson), small dense problems ---------------------

def solve(M, v):
    n = len(v)
    A = [row[:] + [v[i]] for i, row in enumerate(M)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(A[r][c]))
        A[c], A[p] = A[p], A[c]
        if abs(A[c][c]) < 1e-300:
            return None
        for r in range(n):
            if r != c:
                f = A[r][c] / A[c][c]
                for k in range(c, n + 1):
                    A[r][k] -= f * A[c][k]
    return [A[i][n] / A[i][i] for i in range(n)]


def lsq(A, b, cols):
    k = len(cols)
    M = [[sum(r[cols[i]] * r[cols[j]] for r in A) for j in range(k)] for i in range(k)]
    for i in range(k):
        M[i][i] *= 1.0 + 1e-10
    v = [sum(r[cols[i]] * bb for r, bb in zip(A, b)) for i in range(k)]
    z = solve(M, v)
    out = [0.0] * len(A[0])
    if z:
        for i, c in enumerate(cols):
            out[c] = z[i]
    return out


def nnls(A, b, allowed):
    n = len(A[0])
    x = [0.0] * n
    P = []
    for _ in range(3 * n):
        res = [bb - sum(r[j] * x[j] for j in range(n)) for r, bb in zip(A, b)]
        w = [sum(r[j] * e for r, e in zip(A, res)) for j in range(n)]
        cand = [j for j in allowed if j not in P and w[j] > 1e-12]
        if not cand:
            break
        P.append(max(cand, key=lambda j: w[j]))
        while True:
            z = lsq(A, b, P)
            if all(z[j] > 0 for j in P):
                x = z
                break
            alpha = min(x[j] / (x[j] - z[j]) for j in P if z[j] <= 0 and x[j] != z[j]) \
                if any(z[j] <= 0 and x[j] != z[j] for j in P) else 0.0
            x = [x[j] + alpha * (z[j] - x[j]) for j in range(n)]
            P = [j for j in P if x[j] > 1e-15]
            if not P:
                break
    return x


def fit(rows, nfeat, allowed=None):
    """rows: (features, measured us); minimises the relative error."""
    if not rows:
        return [0.0] * nfeat
    A = [[f / t for f in x] for x, t in rows]
    b = [1.0] * len(rows)
    return nnls(A, b, allowed if allowed is not None else list(range(nfeat)))


def dot(c, x):
    return sum(a * b for a, b in zip(c, x))


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float('nan')


def rel_err(rows, c):
    e = [abs(dot(c, x) / t - 1) for x, t in rows]
    return (geo([1 + x for x in e]) - 1, max(e) if e else float('nan'))


def header_value(name):
    for l in open(os.path.join(SRC, 'src', 'route', 'select.h')):
        m = re.match(r'#define\s+%s\s+([0-9.]+)' % name, l)
        if m:
            return float(m.group(1))
    return None


SELECT_C = os.path.join(SRC, 'src', 'route', 'select.c')
# The fields of a coefficient set (tc_coef_set in src/route/select.c), their rows and comments.
FIELDS = [('tc_spmm', 'tensor cores, SpMM: 3xTF32, TF32, 16-bit'),
          ('cu_spmm', 'cuSPARSE SpMM: 32-bit, 16-bit'),
          ('cu3_spmm', 'cuSPARSE CSR_ALG3: 32-bit, 16-bit'),
          ('tc_sddmm', 'tensor cores, SDDMM: 3xTF32, TF32, 16-bit'),
          ('cu_sddmm', 'cuSPARSE SDDMM: 32-bit, 16-bit')]
SET_RE = re.compile(r'/\* sm_(\d+): (.*?) \*/\nstatic const tc_coef_set tc_coef_sm\d+ = \{\n(.*?)\n\};\n',
                    re.S)


def coef_block(src):
    """(start, end) of the text between the BEGIN and END lines of select.c."""
    a = src.index('/* BEGIN COEFFICIENTS')
    return src.index('\n', a) + 1, src.index('/* END COEFFICIENTS */')


def compiled_sets():
    """{arch: (description, {field: rows})} of the sets in src/route/select.c."""
    src = open(SELECT_C).read()
    a, b = coef_block(src)
    sets = {}
    for m in SET_RE.finditer(src[a:b]):
        body, fields = m.group(3), {}
        for name, _ in FIELDS:
            i = body.index('.%s = {' % name)
            j = body.index('\n    },', i)
            fields[name] = [[float(x) for x in row.split(',')]
                            for row in re.findall(r'\{([^{}]*)\}', body[i + len(name) + 5:j])]
        sets[int(m.group(1))] = (m.group(2), fields)
    return sets


def fmt_set(arch, desc, fields):
    s = '/* sm_%d: %s */\nstatic const tc_coef_set tc_coef_sm%d = {\n    .cc = %d,\n' % (
        arch, desc, arch, arch)
    for name, comment in FIELDS:
        s += '    /* %s */\n    .%s = {\n' % (comment, name)
        for c in fields[name]:
            s += '        {' + ', '.join('%.6g' % v for v in c) + '},\n'
        s += '    },\n'
    return s + '};\n'


def fmt_sets(sets):
    """The whole block: the sets, newest architecture first, and their list."""
    archs = sorted(sets, reverse=True)
    text = ''.join(fmt_set(a, sets[a][0], sets[a][1]) for a in archs)
    return text + 'static const tc_coef_set *const tc_coef_sets[] = {%s};\n' % ', '.join(
        '&tc_coef_sm%d' % a for a in archs)


def main():
    args = sys.argv[1:]
    global ALG3_MARGIN, ALG3_MAX_US, SM, SPMM_PIPE_RULE, SPMM_CURRENT_BALANCED
    opt = {'--build': '.', '--data': None, '--threshold': None, '--margin': None,
           '--alg3-margin': None, '--alg3-max-us': None, '--arch': '90', '--gpu': None,
           '--sm': None, '--spmm-files': None, '--sddmm-files': None}
    flags = set()
    i = 0
    while i < len(args):
        if args[i] in opt:
            opt[args[i]] = args[i + 1]
            i += 2
        elif args[i] in ('--update', '--compiled', '-v'):
            flags.add(args[i])
            i += 1
        else:
            sys.exit(__doc__)
    build = opt['--build']
    arch = int(opt['--arch'])
    compiled = compiled_sets()
    gpu = opt['--gpu'] or (compiled[arch][0] if arch in compiled else None)
    if gpu is None:
        sys.exit('fit_model.py: --gpu TEXT describes the new set for sm_%d' % arch)
    SM = int(opt['--sm'] or SM)
    spmm_files, sddmm_files = SPMM_FILES, SDDMM_FILES
    if opt['--spmm-files'] or opt['--sddmm-files']:
        if not (opt['--spmm-files'] and opt['--sddmm-files']):
            sys.exit('fit_model.py: --spmm-files and --sddmm-files go together')
        spmm_files = opt['--spmm-files'].split(',')
        sddmm_files = opt['--sddmm-files'].split(',')
        SPMM_PIPE_RULE = SPMM_CURRENT_BALANCED = set(spmm_files)
    if '--compiled' in flags and arch not in compiled:
        sys.exit('fit_model.py: src/route/select.c has no set for sm_%d' % arch)
    data = opt['--data'] or next((d for d in (os.environ.get('TC_DATA_DIR', ''),
                                              os.path.join(SRC, '..', 'shared', 'data'))
                                  if d and os.path.isdir(d)), '.')
    thr = float(opt['--threshold'] or header_value('TC_SEL_BALANCE_THRESHOLD'))
    ALG3_MARGIN = float(opt['--alg3-margin'] or header_value('TC_SEL_ALG3_MARGIN') or 1.0)
    ALG3_MAX_US = float(opt['--alg3-max-us'] or header_value('TC_SEL_ALG3_MAX_US') or 60.0)
    margins = {0: float(opt['--margin'] or header_value('TC_SEL_GAIN_MARGIN')),
               1: float(opt['--margin'] or header_value('TC_SEL_GAIN_MARGIN_SDDMM'))}

    ops = {0: ('SpMM', load_runs(spmm_files, 'N'), 'cusparse-default'),
           1: ('SDDMM', load_runs(sddmm_files, 'K'), 'cusparse')}
    inputs = sorted({k[0] for _, runs, _ in ops.values() for k in runs})
    stats = compute_stats(inputs, build, data)

    fields = {}
    for op, (opname, runs, cuname) in ops.items():
        keys = sorted(runs)
        feats = features(build, [config_line(op, k, stats[k[0]]) for k in keys], arch)
        tc_rows = {p: [] for p in range(3)}
        cu_rows = {4: [], 2: []}
        cu3_rows = {4: [], 2: []}  # SpMM: cuSPARSE CSR_ALG3 (preprocessed), same features
        cases = []
        for key, f in zip(keys, feats):
            fname, v = runs[key]
            p = PREC[key[2]]
            tb, tl, tcu = v.get('tc-base'), v.get('tc-balanced'), v.get(cuname)
            if None in (tb, tl, tcu):
                continue
            tc_rows[p].append((f['xb'], tb))
            if op == 1 or fname in SPMM_CURRENT_BALANCED:
                tc_rows[p].append((f['xl'], tl))
            cu_rows[2 if p == 2 else 4].append((f['y'], tcu))
            t3 = v.get('cusparse-alg3') if op == 0 else None
            if t3 is not None:
                cu3_rows[2 if p == 2 else 4].append((f['y'], t3))
            cases.append((key, fname, f, tb, tl, tcu, v.get('routed'), t3))
        # SDDMM was measured without 16-bit inputs: its 16-bit sets repeat the TF32 fit.
        tc_coef = [fit(tc_rows[p], NX) if tc_rows[p] else None for p in range(3)]
        cu_coef = {b: fit(cu_rows[b], NY) if cu_rows[b] else None for b in (4, 2)}
        # Without small 16-bit inputs the launch latency of 16-bit cuSPARSE is not
        # identifiable: it is taken from the 32-bit fit and the rest refitted.
        if cu_rows[2] and cu_coef[4] and min(t for _, t in cu_rows[2]) > 100.0:
            c0 = cu_coef[4][0]
            A = [[f / t for f in x] for x, t in cu_rows[2]]
            b = [1.0 - c0 / t for _, t in cu_rows[2]]
            cu_coef[2] = nnls(A, b, list(range(1, NY)))
            cu_coef[2][0] = c0
        cu3_coef = {b: fit(cu3_rows[b], NY) if cu3_rows[b] else None for b in (4, 2)}
        if cu3_coef[2] is None:
            cu3_coef[2] = cu3_coef[4]
        if tc_coef[2] is None:
            tc_coef[2] = tc_coef[1]
        if cu_coef[2] is None:
            cu_coef[2] = cu_coef[4]
        if '--compiled' in flags:
            pre = 'spmm' if op == 0 else 'sddmm'
            cset = compiled[arch][1]
            tc_coef = cset['tc_' + pre]
            cu_coef = {4: cset['cu_' + pre][0], 2: cset['cu_' + pre][1]}
            if op == 0:
                cu3_coef = {4: cset['cu3_spmm'][0], 2: cset['cu3_spmm'][1]}
            print('  (--compiled: the sm_%d coefficients of src/route/select.c, not a fit)' % arch)
        print('== %s: %d cases' % (opname, len(cases)))
        for p, name in enumerate(('3xtf32', 'tf32', '16-bit')):
            if tc_rows[p]:
                g, w = rel_err(tc_rows[p], tc_coef[p])
                print('  TC %-7s %3d points  geomean |rel err| %.3f  worst %.2f' % (name, len(tc_rows[p]), g, w))
        for b in (4, 2):
            if cu_rows[b]:
                g, w = rel_err(cu_rows[b], cu_coef[b])
                print('  cuSPARSE %d-byte %3d points  geomean |rel err| %.3f  worst %.2f' % (b, len(cu_rows[b]), g, w))
            if cu3_rows[b]:
                g, w = rel_err(cu3_rows[b], cu3_coef[b])
                print('  cuSPARSE CSR_ALG3 %d-byte %3d points  geomean |rel err| %.3f  worst %.2f' % (b, len(cu3_rows[b]), g, w))

        # balance threshold: choice between the two measured TC kernels alone
        print('  balance threshold sweep (TC kernel chosen / faster TC kernel; current balanced times only):')
        for t in (1.0, 1.1, 1.2, 1.3, 1.5, 1.75, 2.0, 3.0):
            rr = [(tl if c[2]['ratio'] > t else tb) / min(tb, tl)
                  for c in cases for (tb, tl) in [(c[3], c[4])]
                  if op == 1 or c[1] in SPMM_CURRENT_BALANCED]
            print('    %.2f: geomean %.3f  <=1.05 %d/%d  worst %.2f' % (
                t, geo(rr), sum(r <= 1.05 for r in rr), len(rr), max(rr)))

        margin = margins[op]
        # the compiled-in model (the helper's predictions) against this fit: equal after
        # --update and a rebuild
        diff = max(abs(c[2]['c_pred'][0] - dot(tc_coef[PREC[c[0][2]]], c[2]['xb'])) /
                   max(c[3], 1e-9) for c in cases)
        print('  compiled-in coefficients %s this fit (largest difference %.1e of a measured time)'
              % ('match' if diff < 1e-4 else 'differ from', diff))

        def route(c):
            f = c[2]
            bal = f['ratio'] > thr
            ptc = dot(tc_coef[PREC[c[0][2]]], f['xl'] if bal else f['xb'])
            pcu = dot(cu_coef[2 if PREC[c[0][2]] == 2 else 4], f['y'])
            cu = 'cu'
            # the cuSPARSE route's algorithm (SpMM, ALG_DEFAULT asked): CSR_ALG3 when the
            # model predicts it faster than the default by ALG3_MARGIN
            if op == 0 and cu3_coef[4] is not None and PREC[c[0][2]] != 2 and pcu < ALG3_MAX_US:
                p3 = dot(cu3_coef[4], f['y'])
                if p3 * ALG3_MARGIN < pcu:
                    cu, pcu = 'cu3', p3
            if ptc * margin < pcu:
                return ('bal' if bal else 'base'), ptc, pcu
            return cu, ptc, pcu

        print('  regret of the model\'s routing (threshold %.2f, margin %.2f):' % (thr, margin))
        print('    %-12s %5s %8s %6s %6s %6s %8s' % ('group', 'cases', 'geomean', '<=1.05', '<=1.15', 'worst', 'old rule'))
        groups = {}
        for c in cases:
            path, ptc, pcu = route(c)
            if path == 'cu3' and c[7] is None:
                path = 'cu'  # a run without ALG3 times: count the default
            t = {'base': c[3], 'bal': c[4], 'cu': c[5], 'cu3': c[7]}[path]
            best = min(c[3], c[4], c[5])
            suite = 'large' if 'large' in c[1] else 'small'
            g = '%s N=%d' % (suite, c[0][1])
            old = c[6] / best if c[6] else float('nan')
            for gg in (g, 'all'):
                groups.setdefault(gg, []).append((t / best, old, c, path))
        for g in sorted(groups, key=lambda s: (s == 'all', s)):
            rr = [x[0] for x in groups[g]]
            old = [x[1] for x in groups[g] if x[1] == x[1]]
            print('    %-12s %5d %8.3f %6d %6d %6.2f %8.3f' % (
                g, len(rr), geo(rr), sum(r <= 1.05 for r in rr), sum(r <= 1.15 for r in rr), max(rr), geo(old)))
        if '-v' in flags:
            for r, old, c, path in sorted(groups['all'], key=lambda x: -x[0])[:25]:
                print('    worst: %.2f %s %s %s -> %s (base %.1f bal %.1f cu %.1f us; pred tc %.1f cu %.1f, ratio %.2f)' % (
                    r, c[0][0], c[0][1], c[0][2], path, c[3], c[4], c[5], *route(c)[1:], c[2]['ratio']))
        pre = 'spmm' if op == 0 else 'sddmm'
        fields['tc_' + pre] = tc_coef
        fields['cu_' + pre] = [cu_coef[4], cu_coef[2]]
        if op == 0:
            fields['cu3_spmm'] = [cu3_coef[4], cu3_coef[2]]
            # against the best cuSPARSE algorithm (ALG_DEFAULT or CSR_ALG3, the small suite's goal)
            vs = {}
            for c in cases:
                if c[7] is None:
                    continue
                path = route(c)[0]
                t = {'base': c[3], 'bal': c[4], 'cu': c[5], 'cu3': c[7]}[path]
                suite = 'large' if 'large' in c[1] else 'small'
                for gg in (suite, 'all'):
                    vs.setdefault(gg, []).append(t / min(c[5], c[7]))
            print('  routed / best cuSPARSE (ALG_DEFAULT or CSR_ALG3), ALG3 margin %.2f:' % ALG3_MARGIN)
            for g in sorted(vs):
                rr = vs[g]
                print('    %-6s %5d cases  geomean %.3f  <=1.00 %d  <=1.05 %d  worst %.2f' % (
                    g, len(rr), geo(rr), sum(r <= 1.0 for r in rr), sum(r <= 1.05 for r in rr), max(rr)))

    if '--update' in flags:
        sets = {a: v for a, v in compiled.items()}
        sets[arch] = (gpu, fields)
        src = open(SELECT_C).read()
        a, b = coef_block(src)
        open(SELECT_C, 'w').write(src[:a] + fmt_sets(sets) + src[b:])
        print('updated the sm_%d set of %s (rebuild, then rerun to see the compiled-in model '
              'agree)' % (arch, SELECT_C))
    else:
        print(fmt_set(arch, gpu, fields))


if __name__ == '__main__':
    main()
