# found: run.py --seed 509866 on Python 3.13: differs args
# fixed: 3.13: the same wrong branch on a NumPy bool scalar (np.int32(0) > np.int32(0)) inside a for loop (continued in place): the append in the else branch is skipped

import numpy as np

class Box:

    def __init__(self, x, y):
        self.y = y

    def __repr__(self):
        return 'Box(%r)'
g_count = 3

def f(p0):
    for i1 in range(2):
        v2 = np.int32(0)
        if v2 > v2:
            pass
        else:
            p0.y.append(g_count)
CALLS = [((Box(9, []),), {})]
