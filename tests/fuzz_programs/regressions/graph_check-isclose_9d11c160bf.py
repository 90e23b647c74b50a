# found: run.py --seed 51216 on Python 3.11: graph check isclose
# fixed: the same np.isclose shape rule, its operand a NumPy op's result

import numpy as np

def f(p2):
    acc2 = np.isclose(np.logical_not(p2), min([], default=2))
CALLS = [((np.array([]),), {}), ((np.array([-1.0, -1.0]),), {}), ((np.array([2, -3, -1]),), {})]
