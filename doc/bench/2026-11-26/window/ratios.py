import sys, statistics, collections
# usage: ratios.py FILE KIND(lat|bw) A B  -> per size: median of per-round A/B, middle interval, mark
f, kind, a, b = sys.argv[1:5]
col = 3 if kind == 'lat' else 4
d = collections.defaultdict(dict)
for l in open(f):
    p = l.split()
    if len(p) < 5: continue
    d[(int(p[2]), p[1])][int(p[0])] = float(p[col])
sizes = sorted({k[0] for k in d})
out = []
for s in sizes:
    A, B = d.get((s, a), {}), d.get((s, b), {})
    rs = sorted(A[r] / B[r] for r in A if r in B)
    n = len(rs); lo, hi = rs[n // 4], rs[n - 1 - n // 4]
    m = statistics.median(rs)
    better = (hi < 1) if kind == 'lat' else (lo > 1)
    worse = (lo > 1) if kind == 'lat' else (hi < 1)
    mark = '+' if better else '-' if worse else '='
    out.append((s, "%.2f [%.2f-%.2f] %s" % (m, lo, hi, mark)))
for s, t in out:
    print(s, t)
