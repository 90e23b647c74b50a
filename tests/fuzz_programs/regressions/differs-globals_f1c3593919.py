# found: run.py --seed 66704 on Python 3.11: differs globals
# fixed: np.array of a global list after `del g_items[0]`: the contents at entry were taken

import numpy as np
g_items = [2]

def f():
    global g_arr, g_items
    del g_items[0]
    g_arr = np.array(g_items)
CALLS = [((), {})]
