# found: run.py --seed 65158 on Python 3.11 with every graph native (SOT_CPU_TIER_C=sync, SOT_CPU_TIER_C_HOT=0): differs warnings
# fixed: tier C stored a float into float32 elements casting it per element, or at compile time where it was a constant: NumPy casts it once per assignment, even of no element (1e300 into an empty slice warns "overflow encountered in cast"); the cast is now made once, at run time, through volatiles (stored_number)

import numpy as np

def f(p0):
    p0[1:] = 1e+300
CALLS = [((np.array([], dtype=np.float32),), {})]
