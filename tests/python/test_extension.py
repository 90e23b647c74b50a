"""The `_sot` extension loads in the interpreter running the tests (3.11, 3.12 and 3.13 in `make test`) and
describes the build it came from."""

import sys

import sot


def test_core_was_built_for_this_interpreter():
    info = sot.build_info()
    major_minor = "%d.%d." % sys.version_info[:2]
    assert info["python_version"].startswith(major_minor)
    assert info["python_hex"] >> 16 == sys.hexversion >> 16


def test_version_is_the_project_version():
    assert sot.__version__ == sot.build_info()["sot_version"]
    assert sot.__version__.count(".") == 2


def test_extension_module_is_inside_the_package():
    assert sot._sot.__file__.startswith(sot.__path__[0])
