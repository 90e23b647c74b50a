# found: run.py --seed 41161 on Python 3.11: differs globals
# fixed: np.array of a list received from outside after the frame changed it (p0.pop()): the list's contents at entry were taken (a list the frame changes is no constant now)

import numpy as np

def f(p0):
    global g_arr
    p0.pop()
    g_arr = np.array(p0)
CALLS = [(([0],), {})]
