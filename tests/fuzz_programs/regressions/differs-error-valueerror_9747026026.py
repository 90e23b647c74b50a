# found: run.py --seed 510932 on Python 3.13: differs error ValueError IndexError
# fixed: 3.13: the same wrong branch on a NumPy bool (0-d array g_arr > 0, False) inside a while loop: the unpacking in the if body runs and raises ValueError (plain: IndexError from the pop after it)

import numpy as np
g_items = []
g_arr = np.array(-2.0)

def f():
    while 3:
        if g_arr > 0:
            v4, = ()
        g_items.pop()
CALLS = [((), {})]
