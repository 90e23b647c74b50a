# found: run.py --seed 409301 on Python 3.12: differs error AttributeError
# fixed: after a graph break (UNPACK_EX) the resume function folds `del p0.z` twice inside try/except Exception and replays both deletes after the block: the second raises AttributeError past the handler (plain: caught)

class Box:

    def __init__(self, x, y):
        pass

    def __repr__(self):
        return 'Box(%r)'

def f(p0):
    p0.z = []
    *v3, = []
    try:
        del p0.z
        del p0.z
    except Exception as e6:
        pass
CALLS = [((Box(2, []),), {})]
