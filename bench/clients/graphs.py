"""Graph sources of the client benchmark, as square CSR structures with numpy.

Spec strings:
  mtx:NAME              $TC_DATA_DIR/NAME.mtx.gz (or .mtx; NAME may also be a path)
  diag:NAME:K           the Matrix Market graph NAME repeated K times along the diagonal
  chunglu:S:D[:GAMMA]   Chung-Lu graph, 2^S nodes, average degree D, power-law exponent
                        GAMMA (default 2.5)
  rmat:S:EF             R-MAT, 2^S nodes, EF * 2^S edges drawn (Graph500: a=0.57,
                        b=0.19, c=0.19, labels scrambled)

Every graph comes out without self loops and without duplicate entries; the generated ones are
symmetrised (undirected), the files keep their own direction.  load() caches the result as an
.npz in the cache folder, so the benchmark's many processes read it instead of parsing or
generating it again.
"""
import gzip
import os
import re

import numpy as np

# Part of every cache file name: bump it when a generator or reader changes what it returns.
FORMAT = 1
SEED = 20240611


def default_data_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("TC_DATA_DIR") or os.path.normpath(
        os.path.join(here, "..", "..", "..", "shared", "data"))


def _dedup(n, rows, cols):
    """Sorted (row, col) pairs without self loops or duplicates."""
    keep = rows != cols
    key = rows[keep].astype(np.int64) * n + cols[keep]
    key.sort()  # sort + neighbour test: numpy 2's np.unique hashes first and is much slower
    if key.size:
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
    return key // n, key % n


def _symmetrise(n, rows, cols):
    return _dedup(n, np.concatenate([rows, cols]), np.concatenate([cols, rows]))


def read_mtx(path):
    """(n, rows, cols) of a coordinate Matrix Market file, 0-based, symmetric storage expanded,
    values ignored.  The body is parsed by numpy in one call (no Python loop per entry)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        header = f.readline().lower().split()
        if len(header) < 5 or header[0] != "%%matrixmarket" or header[2] != "coordinate":
            raise ValueError(f"{path}: not a coordinate Matrix Market file")
        line = f.readline()
        while line.startswith("%") or not line.strip():
            line = f.readline()
        m, ncols, nnz = (int(x) for x in line.split()[:3])
        body = np.loadtxt(f, dtype=np.int64, usecols=(0, 1), comments="%", ndmin=2)
    if body.shape[0] != nnz:
        raise ValueError(f"{path}: {body.shape[0]} entries, the size line says {nnz}")
    rows, cols = body[:, 0] - 1, body[:, 1] - 1
    n = max(m, ncols)
    if header[4] in ("symmetric", "skew-symmetric", "hermitian"):
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    rows, cols = _dedup(n, rows, cols)
    return n, rows, cols


def _mtx_path(name, data_dir):
    for cand in (name, os.path.join(data_dir, name + ".mtx.gz"),
                 os.path.join(data_dir, name + ".mtx"), os.path.join(data_dir, name)):
        if os.path.isfile(cand):
            return cand
    raise FileNotFoundError(f"no Matrix Market file for '{name}' in {data_dir} "
                            f"(set TC_DATA_DIR or --data)")


def block_diagonal(n, rows, cols, k):
    off = (np.arange(k, dtype=np.int64) * n)[:, None]
    return n * k, (rows[None, :] + off).ravel(), (cols[None, :] + off).ravel()


def chung_lu(scale, degree, gamma=2.5, seed=SEED):
    """Undirected Chung-Lu graph: expected degrees w_i ~ (i+1)^(-1/(gamma-1)), capped at
    sqrt(sum w) (so that every edge probability stays <= 1), scaled to average `degree`;
    both ends of each edge drawn independently in proportion to w, node labels permuted.
    Edges are drawn in batches until the deduplicated graph has at least n * degree entries."""
    n = 1 << scale
    rng = np.random.default_rng([seed, scale, int(degree * 1000), int(gamma * 1000)])
    w = np.arange(1, n + 1, dtype=np.float64) ** (-1.0 / (gamma - 1.0))
    w *= n * degree / w.sum()
    for _ in range(20):  # the cap lowers the sum: rescale until it settles
        w = np.minimum(w, np.sqrt(w.sum()))
        w *= n * degree / w.sum()
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    perm = rng.permutation(n)
    target = int(n * degree)
    rows = cols = np.empty(0, dtype=np.int64)
    draw = target // 2
    for _ in range(16):
        r = perm[np.searchsorted(cdf, rng.random(draw), side="right").clip(max=n - 1)]
        c = perm[np.searchsorted(cdf, rng.random(draw), side="right").clip(max=n - 1)]
        have = rows.size
        rows, cols = _symmetrise(n, np.concatenate([rows, r]), np.concatenate([cols, c]))
        if rows.size >= target:
            break
        # new entries per edge drawn in this batch: the next batch is sized from it (+25%)
        gain = max((rows.size - have) / draw, 0.05)
        draw = int((target - rows.size) / gain * 1.25) + 1024
    return n, rows, cols


def rmat(scale, edge_factor, seed=SEED, a=0.57, b=0.19, c=0.19):
    """Undirected R-MAT graph (Graph500 parameters): edge_factor * 2^S edges, each placed by S
    quadrant choices, labels permuted at random, then symmetrised."""
    n = 1 << scale
    m = edge_factor * n
    rng = np.random.default_rng([seed, scale, edge_factor])
    rows = np.zeros(m, dtype=np.int64)
    cols = np.zeros(m, dtype=np.int64)
    for level in range(scale):
        u = rng.random(m)
        bit = np.int64(1) << (scale - 1 - level)
        row_bit = u >= a + b                               # quadrants c and d
        col_bit = ((u >= a) & (u < a + b)) | (u >= a + b + c)  # quadrants b and d
        rows |= row_bit * bit
        cols |= col_bit * bit
    perm = rng.permutation(n)
    return (n,) + _symmetrise(n, perm[rows], perm[cols])


def build(spec, data_dir):
    """(n, rows, cols) of a spec string, uncached."""
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    if kind == "mtx" and len(parts) == 1:
        return read_mtx(_mtx_path(parts[0], data_dir))
    if kind == "diag" and len(parts) == 2:
        return block_diagonal(*read_mtx(_mtx_path(parts[0], data_dir)), int(parts[1]))
    if kind == "chunglu" and len(parts) in (2, 3):
        gamma = float(parts[2]) if len(parts) == 3 else 2.5
        return chung_lu(int(parts[0]), float(parts[1]), gamma)
    if kind == "rmat" and len(parts) == 2:
        return rmat(int(parts[0]), int(parts[1]))
    raise ValueError(f"graph spec '{spec}': expected mtx:NAME, diag:NAME:K, "
                     f"chunglu:SCALE:DEGREE[:GAMMA] or rmat:SCALE:EDGEFACTOR")


def cache_path(spec, cache_dir):
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", spec)
    return os.path.join(cache_dir, f"tcsparse-clients-v{FORMAT}-{safe}.npz")


def load(spec, data_dir=None, cache_dir="/tmp"):
    """(n, indptr int64, indices int64) of the graph: CSR, rows sorted, no self loops."""
    path = cache_path(spec, cache_dir)
    if os.path.isfile(path):
        with np.load(path) as z:
            return int(z["n"]), z["indptr"], z["indices"]
    n, rows, cols = build(spec, data_dir or default_data_dir())
    if rows.size and np.any(np.diff(rows) < 0):
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    os.makedirs(cache_dir, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp.npz"  # rename: concurrent readers never see half a file
    np.savez(tmp, n=n, indptr=indptr, indices=cols.astype(np.int64))
    os.replace(tmp, path)
    return n, indptr, cols.astype(np.int64)
