# found: run.py --seed 415281 on Python 3.12: differs globals
# fixed: a graph op that raises when the graph runs (setitem of NaN into an int64 array: ValueError) drops the effects recorded before it: `g_count += p2` (STORE_GLOBAL) is replayed after the graph, so g_count stays 3 (plain: the new array)

import numpy as np
g_count = 3

def f(p2):
    global g_count
    g_count += p2
    p2[1] = np.float32(float('nan'))
CALLS = [((np.array([[3, -1], [1, 3]]),), {})]
