"""Globals created, changed and deleted within one translated call, in every order: create then delete (the name
did not exist before), store then delete an existing one, delete then re-create, create-delete-create, a delete
of a missing name (NameError), a read after the delete (NameError), the same through an inlined helper and across
a graph break. Each runs from the same starting globals (``init``; ``ABSENT``: the name does not exist) with
several argument sets through one translated function; values, exceptions and the module's g_* globals after the
call are compared with the plain run. PYTEST_DONT_REWRITE."""

import pytest
from differential import ABSENT, check_varied
from harness import in_child

START = {"g_new": ABSENT, "g_old": 10}


def create_then_delete(v):
    global g_new
    g_new = v
    del g_new
    return 5


def store_then_delete_existing(v):
    global g_old
    g_old = v
    del g_old
    return v


def delete_then_recreate(v):
    global g_old
    del g_old
    g_old = v * 2
    return g_old


def create_delete_create(v):
    global g_new
    g_new = 1
    del g_new
    g_new = v
    return g_new


def delete_missing(v):
    global g_new
    del g_new
    return v


def read_after_delete(v):
    global g_new
    g_new = v
    del g_new
    return g_new


def helper_creates_and_deletes(v):
    global g_new
    g_new = v + 1
    w = g_new
    del g_new
    return w


def through_helper(v):
    return helper_creates_and_deletes(v) * 2


def across_break(v):
    global g_new
    g_new = v
    print("between")
    del g_new
    return v


CASES = [create_then_delete, store_then_delete_existing, delete_then_recreate, create_delete_create,
         delete_missing, read_after_delete, through_helper, across_break]


@pytest.mark.parametrize("fn", CASES, ids=[fn.__name__ for fn in CASES])
def test_global_lifetimes(fn):
    in_child(lambda: check_varied(fn, [((1,), {}), ((7,), {}), (("s",), {})], init=START))
