"""torch.sparse.mm(A, X) forward and backward (the gradient of X is A^T G) on a client graph:
ms a step (CUDA events over 20 steps, median of 5) and the CUDA kernels of 10 profiled steps.

    python3 bench/clients/backward.py GRAPH N            # plain
    LD_PRELOAD=libtcsparse_preload.so python3 bench/clients/backward.py GRAPH N
    STEPS=14 TCSPARSE_LOG=1 LD_PRELOAD=... python3 bench/clients/backward.py GRAPH N  # the log

GRAPH is a graph spec of graphs.py (mtx:NAME reads $TC_DATA_DIR, default ../shared/data beside
the repository); the graph cache is /tmp/gcache.
"""
import sys, os, types, torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clients
spec, N = sys.argv[1], int(sys.argv[2])
here = os.path.dirname(os.path.abspath(__file__))
data = os.environ.get('TC_DATA_DIR', os.path.join(here, '..', '..', '..', 'shared', 'data'))
args = types.SimpleNamespace(data=data, cache='/tmp/gcache', index_dtype='int32')
g = clients.Graph(spec, args, torch.device('cuda'))
x = torch.randn(g.n, N, device='cuda', requires_grad=True)
gy = torch.randn(g.n, N, device='cuda')
def f():
    y = torch.sparse.mm(g.a32, x)
    y.backward(gy)
steps = int(os.environ.get('STEPS', '30'))
for _ in range(steps): f()
torch.cuda.synchronize()
if os.environ.get('TCSPARSE_LOG'):
    sys.exit(0)
res = []
for r in range(5):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(20): f()
    e.record(); torch.cuda.synchronize(); res.append(s.elapsed_time(e) / 20)
res.sort()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(10): f()
    torch.cuda.synchronize()
tab = {}
for ev in p.events():
    if ev.device_type == torch.autograd.DeviceType.CUDA:
        t = tab.setdefault(ev.name[:70], [0, 0.0]); t[0] += 1; t[1] += ev.device_time
print('%s N=%d %s ms/step median %.4f min %.4f' % (spec, N, os.environ.get('LD_PRELOAD','plain')[-28:], res[2], res[0]))
for k, v in sorted(tab.items(), key=lambda kv: -kv[1][1])[:6]:
    print('   %-70s %4d calls %8.1f us/step' % (k, v[0], v[1] / 10))
