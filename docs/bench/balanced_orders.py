#!/usr/bin/env python3
"""The order of the sides in each round of an interleaved bench: a Williams design, in which
each side runs right after each other side equally often over all its orders (n orders for
an even n sides, 2n for an odd n). Rotating one order (r, r+1, ...) leaves every side always
after the same one, so that what a run leaves behind (writeback, a cold cache) always falls
on that side. benches/common/mod.rs (balanced_orders) builds the same orders.

Usage: docs/bench/balanced_orders.py SIDES ROUND   prints round ROUND's order (from 0),
the sides numbered from 0, separated by spaces; round ROUND takes order ROUND modulo their
count. Imported by docs/bench/tracer-cost.py.
"""

import sys


def balanced_orders(n):
    """The orders: the first is 0, 1, n-1, 2, n-2, ..., the others add 1, 2, ... to it
    (modulo n), and for an odd n each of these reversed as well."""
    first = [(k + 1) // 2 if k % 2 else (n - k // 2) % n for k in range(n)]
    orders = [[(s + i) % n for s in first] for i in range(n)]
    return orders + [o[::-1] for o in orders] if n % 2 else orders


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: docs/bench/balanced_orders.py SIDES ROUND")
    orders = balanced_orders(int(sys.argv[1]))
    print(" ".join(str(s) for s in orders[int(sys.argv[2]) % len(orders)]))
