# found: run.py --seed 65295 on Python 3.11: differs error ValueError ValueError
# fixed: np.array of a global list after the frame extended it: the list's contents at entry were taken, so the error named the old shape

import numpy as np
g_items = [1, 2]

def f():
    g_items.extend(list({'': 3}.values()))
    v4 = np.array(g_items) + np.arange(0).reshape(-1)
CALLS = [((), {})]
