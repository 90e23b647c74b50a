# found: run.py --seed 407349 on Python 3.12: graph check add
# fixed: a ufunc given out= (np.add(p0, 2, out=p2), p0 bool, p2 int64) made a graph op whose result was its first argument, not out (check_graphs: 'graph op %2 = add(%0, 2, %1) said int64[1], NumPy made dtype bool')

import numpy as np

def f(p0, p2):
    np.add(p0, 2, out=p2)
CALLS = [((np.array([True]), np.array([3])), {})]
