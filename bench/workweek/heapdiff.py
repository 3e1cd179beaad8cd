#!/usr/bin/env python3
"""heapdiff: what grew between two heap walks of heapwalk.c (README.md).

    heapdiff.py A.txt B.txt [N]
    heapdiff.py --series FILE...   (one line a walk: uordblks, the live
                                    bytes (tcache left out), heap RSS)

Chunks held in glibc's tcache (freed, kept for reuse; mallinfo2 counts
them as in use) carry the process's tcache key in their bytes 8..15: the
most frequent such value that is not a pointer is taken as that key and
those chunks are grouped as "tcache" (free, not live data). Groups the
other chunks in use of each walk by a signature: for a chunk that
starts with text, its first 24 characters with every digit made 9 (so
"task-12-…" and "task-31-…" group together); for the others, "bin" and the
chunk's size. Prints both walks' mallinfo2 line, then the N (default 40)
groups whose bytes grew the most: count and bytes in A, in B, the change.
"""
import re
import sys
from collections import Counter, defaultdict


def tcache_key(rows):
    seen = Counter(h[16:32] for _, h, _ in rows if len(h) == 32)
    for v, n in seen.most_common(8):
        if n >= 8 and not v.endswith("0000") and v != "0" * 16:
            return v
    return None


def load(path):
    head = ""
    rows = []
    groups = defaultdict(lambda: [0, 0])
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("#"):
                head = line.strip()
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((int(parts[0]), parts[1], parts[2]))
    key = tcache_key(rows)
    for size, hexa, text in rows:
        prefix = text[:24]
        if key and hexa[16:32] == key:
            sig = "tcache (free)"
        elif len(prefix) >= 8 and "." not in prefix[:8]:
                sig = "txt " + re.sub(r"[0-9]", "9", prefix)
        else:
            sig = "bin %d" % size
        g = groups[sig]
        g[0] += 1
        g[1] += size
    return head, groups


def series(paths):
    print("%-28s %10s %10s %8s" % ("walk", "uordblks", "live", "heap kB"))
    for p in paths:
        head, groups = load(p)
        f = dict(zip(head.split()[1::2], head.split()[2::2]))
        live = sum(b for sig, (_, b) in groups.items() if sig != "tcache (free)")
        print("%-28s %10s %10d %8s" % (p[-28:], f.get("uordblks"), live, f.get("heap_rss_kb")))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--series":
        series(sys.argv[2:])
        return
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    ha, a = load(sys.argv[1])
    hb, b = load(sys.argv[2])
    print("A:", ha)
    print("B:", hb)
    rows = []
    for sig in set(a) | set(b):
        ca, ba = a.get(sig, (0, 0))
        cb, bb = b.get(sig, (0, 0))
        rows.append((bb - ba, sig, ca, ba, cb, bb))
    rows.sort(reverse=True)
    tot = sum(r[0] for r in rows)
    print("total change in chunks in use: %+d bytes" % tot)
    print("%8s %6s %8s %6s %8s  %s" % ("change", "n A", "bytes A", "n B", "bytes B", "signature"))
    for d, sig, ca, ba, cb, bb in rows[:n]:
        print("%+8d %6d %8d %6d %8d  %r" % (d, ca, ba, cb, bb, sig))


if __name__ == "__main__":
    main()
