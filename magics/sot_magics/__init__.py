"""IPython magics of xeus-sot.

``%%sot`` runs a cell with xeus-sot watching it. The cell's own output, value and errors are exactly those of a
plain run: the cell runs through the shell's ``run_cell``, and its line numbers in tracebacks are those of the
cell as the user sees it (the ``%%sot`` line is line 1, shown as a comment).

Loaded automatically by the xsot kernel; elsewhere ``%load_ext sot_magics``.
"""

from IPython.core.magic import Magics, cell_magic, magics_class


def cell_body_source(line, cell):
    """The source run for a ``%%sot`` cell body: a comment stands in for the ``%%sot`` line (IPython drops leading
    blank lines), so that line numbers in tracebacks match the cell the user sees."""
    return f"# %%sot {line}".rstrip() + "\n" + cell


@magics_class
class SotMagics(Magics):
    @cell_magic
    def sot(self, line, cell):
        """Run the cell with xeus-sot.

        The cell runs exactly as it would without the magic (its output, value and errors are unchanged).
        Frame capture, translation and the report are being built (see docs/architecture.md, "Status"): in this
        version the cell runs plainly.
        """
        self.shell.run_cell(cell_body_source(line, cell), store_history=False)


def load_ipython_extension(ipython):
    ipython.register_magics(SotMagics)
