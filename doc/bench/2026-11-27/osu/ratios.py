# SPDX-License-Identifier: BSD-3-Clause
# ratios.py FILE A B [SIZES]: per test and size, the medians of A and B and the median of the
# per-round A/B ratios with their range, from ab.sh's output.
import collections, re, statistics, sys

f, a, b = sys.argv[1:4]
want = set(int(s) for s in sys.argv[4].split(',')) if len(sys.argv) > 4 else None
d = collections.defaultdict(dict)  # (test, size, variant) -> {round: value}
cur = None
for line in open(f):
    m = re.match(r'## round (\d+) (\S+) (\S+)', line)
    if m:
        cur = (int(m.group(1)), m.group(2), m.group(3))
        continue
    p = line.split()
    if cur and len(p) >= 2 and p[0].isdigit():
        d[(cur[1], int(p[0]), cur[2])][cur[0]] = float(p[1])
for t in sorted({k[0] for k in d}):
    print("==", t, "%s/%s: median of the per-round ratios [min-max]" % (a, b))
    for s in sorted({k[1] for k in d if k[0] == t}):
        if want and s not in want:
            continue
        A, B = d.get((t, s, a), {}), d.get((t, s, b), {})
        rs = sorted(A[r] / B[r] for r in A if r in B)
        if rs:
            print("%9d %s %9.2f %s %9.2f  %.2f [%.2f-%.2f]" % (s, a, statistics.median(A.values()),
                  b, statistics.median(B.values()), statistics.median(rs), rs[0], rs[-1]))
