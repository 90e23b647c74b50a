import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))  # harness.py

# SOT_TEST_NUMPY_PROMOTION=weak runs the NumPy tests under NEP 50 (NumPy 2's promotion), which NumPy 1.24
# offers as an experimental state: the translator reads the state and must follow it.
if os.environ.get("SOT_TEST_NUMPY_PROMOTION") == "weak":
    try:
        import numpy

        if hasattr(numpy, "_set_promotion_state"):
            numpy._set_promotion_state("weak")
    except ImportError:
        pass
