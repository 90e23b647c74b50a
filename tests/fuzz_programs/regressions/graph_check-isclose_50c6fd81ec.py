# found: run.py --seed 38257 on Python 3.11: graph check isclose
# fixed: np.isclose of an array whose size had changed between calls (a shape symbol) gave a result of the first call's size: its shape rule read sizes without specializing them (searchsorted's too)

import numpy as np
g_count = 3

def f(p2):
    acc2 = np.isclose(p2, g_count)
CALLS = [((np.array([]),), {}), ((np.array([False, False, False]),), {}), ((np.array([False, True]),), {})]
