# found: run.py --seed 508360 on Python 3.13: differs value
# fixed: 3.13: a branch on a NumPy bool scalar (np.float32(2) > 3) that continues in place (the function has a try block) takes the true branch: the rebuilt stack holds np.False_, which 3.13's POP_JUMP_IF_FALSE (it expects an exact bool after COMPARE_OP's to-bool flag) takes as true

import numpy as np
g_count = 3

def f():
    try:
        pass
    except Exception as e8:
        pass
    if np.float32(2) > g_count:
        return {()}
CALLS = [((), {})]
