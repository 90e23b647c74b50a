"""The whole jupyter_kernel_test suite against xsot, with every optional sample filled in (a skip fails)."""

import jupyter_kernel_test


class XSotKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "xsot"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('oops', file=sys.stderr)"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "import itertools; itertools.chai", "matches": {"chain"}},
    ]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2", "for i in range(3):"]
    invalid_code_samples = ["import = 7q"]

    code_page_something = "print?"
    code_generate_error = "raise ValueError('an error from the test')"

    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
        {"code": "'x' * 3", "result": "'xxx'"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))", "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
         "mime": "text/latex"},
        {"code": "from IPython.display import SVG, display; "
                 "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>'))",
         "mime": "image/svg+xml"},
    ]

    code_history_pattern = "1+2*"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"
