"""Stream output benchmark: a cell printing 20,000 lines (``for i in range(20000): print(i, 'x')``) on the xsot
kernel and on ipykernel (the kernel environment's ``python3`` kernel), in the same run. For each kernel:

- seconds from sending the execute request to the kernel's idle status, every iopub message read as it comes
  (best and median of REPEAT runs, one started kernel per kind);
- the number of ``stream`` messages the cell produced;
- the number of outputs the cell has in a notebook saved by nbclient (what ``make demo`` and nbconvert write).

Needs the Jupyter environment of ``make test`` (JUPYTER_PATH with the build tree's kernelspec):

    make bench    # or: source build/env.sh; python tests/bench/bench_output.py [--lines N] [--repeat N]
"""

import argparse
import statistics
import time

import nbformat
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

KERNELS = (("xsot", "xsot"), ("ipykernel", "python3"))


def timed_run(kc, code, timeout=300):
    """Seconds to idle and the number of stream messages of one execution of ``code``."""
    start = time.perf_counter()
    msg_id = kc.execute(code)
    streams = 0
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            streams += 1
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    seconds = time.perf_counter() - start
    reply = kc.get_shell_msg(timeout=timeout)
    assert reply["content"]["status"] == "ok", reply["content"]
    return seconds, streams


def saved_outputs(kernel_name, code):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    NotebookClient(nb, kernel_name=kernel_name, timeout=600).execute()
    return len(nb.cells[0].outputs)


def measure(kernel_name, code, repeat):
    km, kc = start_new_kernel(kernel_name=kernel_name, startup_timeout=60)
    try:
        runs = [timed_run(kc, code) for _ in range(repeat)]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    seconds = [s for s, _ in runs]
    return {"best_s": min(seconds), "median_s": statistics.median(seconds), "stream_messages": runs[0][1],
            "saved_outputs": saved_outputs(kernel_name, code)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    code = f"for i in range({args.lines}):\n    print(i, 'x')"
    results = {label: measure(name, code, args.repeat) for label, name in KERNELS}
    print(f"output benchmark: a cell printing {args.lines} lines, {args.repeat} runs per kernel")
    print(f"{'kernel':<10} {'best s':>8} {'median s':>9} {'stream msgs':>12} {'saved outputs':>14}")
    for label, r in results.items():
        print(f"{label:<10} {r['best_s']:>8.3f} {r['median_s']:>9.3f} {r['stream_messages']:>12} "
              f"{r['saved_outputs']:>14}")
    ours, ref = results["xsot"], results["ipykernel"]
    print(f"xsot / ipykernel: time (best) {ours['best_s'] / ref['best_s']:.2f}x, "
          f"stream messages {ours['stream_messages']} vs {ref['stream_messages']}")


if __name__ == "__main__":
    main()
