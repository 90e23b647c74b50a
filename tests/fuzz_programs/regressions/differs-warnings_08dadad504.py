# found: run.py --seed 15033 on Python 3.11: differs warnings
# fixed: every graph native (SOT_CPU_TIER_C_HOT=0): NumPy's sign/maximum loops clear the thread's floating-point flags when they end, hiding flags raised before them inside compiled code (the runner now calls each NumPy loop behind one that raises them again), and a NumPy float scalar nothing reads (or read only by a comparison with NaN the compiler folds) was dropped with its flags (SOT_KEEP)

import numpy as np

def f(p0):
    p0 = np.sqrt(p0) * np.sign(p0)
CALLS = [((np.array([-1.0]),), {})]
