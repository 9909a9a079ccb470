#!/usr/bin/env python3
"""pairs_ci.py [TOGGLE_JSON] - the toggle mode's per-pair median with 95% intervals.

For each configuration and flow count of build/bench/toggle.json (bench/run
toggle): the median of the per-pair ratios (step on / step off, router
ns/pkt), and the 2.5th and 97.5th percentiles of the median over 5,000
resamples, first of the pairs, then of blocks of 20 consecutive pairs (which
keeps the drift neighbouring pairs share).  Seeded: the same file gives the
same figures.
"""
import json
import random
import statistics
import sys


def interval(vals, block, rng, rounds=5000):
    blocks = [vals[i:i + block] for i in range(0, len(vals) - block + 1, block)]
    meds = []
    for _ in range(rounds):
        sample = []
        for _ in blocks:
            sample += rng.choice(blocks)
        meds.append(statistics.median(sample))
    meds.sort()
    return meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "build/bench/toggle.json"
    try:
        with open(path) as f:
            summary = json.load(f)["summary"]
    except (OSError, ValueError, KeyError) as e:
        print(f"Error: cannot read a toggle summary from {path}: {e}", file=sys.stderr)
        return 1
    for s in summary:
        r = s["ratios"]
        if len(r) < 2:
            print(f"{s['config']} flows {s['flows']}: {len(r)} pair(s), too few for an interval")
            continue
        rng = random.Random(1)
        lo, hi = interval(r, 1, rng)
        line = (f"{s['config']} flows {s['flows']}: {len(r)} pairs, median {statistics.median(r):.3f}, "
                f"95% interval {lo:.3f}-{hi:.3f}")
        if len(r) >= 40:
            blo, bhi = interval(r, 20, rng)
            line += f" (blocks of 20 pairs: {blo:.3f}-{bhi:.3f})"
        print(line + f", {sum(x <= 1.1 for x in r)} pairs <= 1.1")
    return 0


if __name__ == "__main__":
    sys.exit(main())
