"""The IPython shell of the xsot kernel.

Each cell runs inside ``output.CellOutput``: its stream output is batched and published before the kernel sends the
cell's error and reply (xeus-python publishes those after ``run_cell`` returns).

xeus-python-shell reports an error's ``ename`` as ``str(type)`` ("<class 'ZeroDivisionError'>"); Jupyter clients,
nbclient's ``allow_errors`` checks and our tests expect the class name ("ZeroDivisionError").
"""

from xeus_python_shell.compiler import XCachingCompiler
from xeus_python_shell.display import XDisplayHook, XDisplayPublisher
from xeus_python_shell.shell import XPythonShell, XPythonShellApp

from .output import CellOutput


def error_name(etype):
    """The name a Jupyter client shows for an exception type: its class name."""
    return etype.__name__ if isinstance(etype, type) else str(etype)


class XSotShell(XPythonShell):
    def run_cell(self, *args, **kwargs):
        with CellOutput():
            return super().run_cell(*args, **kwargs)

    def _showtraceback(self, etype, evalue, stb):
        self.last_error = [error_name(etype), str(evalue), stb]


class XSotShellApp(XPythonShellApp):
    def init_shell(self):
        self.shell = XSotShell.instance(
            display_pub_class=XDisplayPublisher,
            displayhook_class=XDisplayHook,
            compiler_class=XCachingCompiler,
            user_ns=self.user_ns,
        )
