"""Facts the residency work of issue 35 is designed on, read off the GPU machine through CuPy and cuda-bindings
(no build of ours needed): where cuBLAS lives, what a launch, an async allocation, a one-word read back and a
CUDA graph replay cost, whether the driver has graph conditional nodes, and what CuPy and torch export through
__cuda_array_interface__ and __dlpack__. Prints one JSON object; run it as `python3 tests/device/cuda_probe.py`.
"""
import glob
import json
import os
import subprocess
import sys
import time


def timed(fn, n):
    fn()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return round(best * 1e6, 3)


def libraries():
    out = {}
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
        out["ldconfig"] = sorted({line.split()[0] for line in text.splitlines() if "cublas" in line})
    except OSError as exc:
        out["ldconfig"] = repr(exc)
    pats = ["/usr/local/cuda*/lib64/libcublas*.so*", "/usr/local/cuda*/targets/*/lib/libcublas*.so*",
            sys.prefix + "/lib/python3*/site-packages/nvidia/cu*/lib/libcublas*.so*",
            sys.prefix + "/lib/python3*/site-packages/nvidia/cublas/lib/libcublas*.so*"]
    out["files"] = sorted({p for pat in pats for p in glob.glob(pat)})[:20]
    out["LD_LIBRARY_PATH"] = os.environ.get("LD_LIBRARY_PATH", "")
    return out


def cupy_facts():
    import cupy as cp

    facts = {"cupy": cp.__version__, "driver": cp.cuda.runtime.driverGetVersion(),
             "runtime": cp.cuda.runtime.runtimeGetVersion()}
    empty = cp.RawKernel(r'extern "C" __global__ void k(double* p) {}', "k")
    buf = cp.zeros(1)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        facts["launch_async_us"] = timed(lambda: empty((1,), (32,), (buf,)), 2000)

        def launch_sync():
            empty((1,), (32,), (buf,))
            stream.synchronize()

        facts["launch_sync_us"] = timed(launch_sync, 2000)
        facts["read_one_word_us"] = timed(lambda: float(buf[0]), 2000)

        def alloc_async():
            p = cp.cuda.runtime.mallocAsync(1 << 20, stream.ptr)
            cp.cuda.runtime.freeAsync(p, stream.ptr)

        facts["malloc_free_async_us"] = timed(alloc_async, 2000)
        facts["malloc_free_sync_us"] = timed(lambda: cp.cuda.runtime.free(cp.cuda.runtime.malloc(1 << 20)), 200)
        stream.begin_capture()
        for _ in range(100):
            empty((1,), (32,), (buf,))
        graph = stream.end_capture()
        graph.upload(stream)

        def replay():
            graph.launch(stream)
            stream.synchronize()

        facts["graph_100_launches_us"] = timed(replay, 200)

        def direct():
            for _ in range(100):
                empty((1,), (32,), (buf,))
            stream.synchronize()

        facts["direct_100_launches_us"] = timed(direct, 200)
    x = cp.arange(12.0).reshape(3, 4)[:, 1:]
    facts["cupy_cai"] = {k: str(v) for k, v in x.__cuda_array_interface__.items()}
    try:
        cap = x.__dlpack__(max_version=(1, 0))
        facts["cupy_dlpack_versioned"] = repr(cap)[:80]
    except Exception as exc:  # noqa: BLE001 - the fact is the failure
        facts["cupy_dlpack_versioned"] = repr(exc)[:200]
    facts["cupy_dlpack_device"] = str(x.__dlpack_device__())
    return facts


def torch_facts():
    import torch

    t = torch.arange(12.0, device="cuda").reshape(3, 4)[:, 1:]
    out = {"torch_cai": {k: str(v) for k, v in t.__cuda_array_interface__.items()} if t.dtype != torch.bfloat16
           else None}
    try:
        out["torch_dlpack_versioned"] = repr(t.__dlpack__(max_version=(1, 0)))[:80]
    except Exception as exc:  # noqa: BLE001
        out["torch_dlpack_versioned"] = repr(exc)[:200]
    return out


def driver_facts():
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        return {"cuda.bindings": repr(exc)}
    names = ["cuGraphConditionalHandleCreate", "cuGraphAddNode_v2", "cuMemAllocAsync", "cuMemPoolSetAttribute",
             "cuStreamBeginCaptureToGraph", "cuGraphInstantiateWithParams", "cuLaunchHostFunc"]
    out = {name: hasattr(driver, name) for name in names}
    err, version = driver.cuDriverGetVersion()
    out["cuDriverGetVersion"] = [int(err), version]
    return out


def main():
    facts = {"libraries": libraries()}
    for name, fn in (("cupy", cupy_facts), ("torch", torch_facts), ("driver", driver_facts)):
        try:
            facts[name] = fn()
        except Exception as exc:  # noqa: BLE001 - every part reports, whatever fails
            facts[name] = repr(exc)[:400]
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main()
