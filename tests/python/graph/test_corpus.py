"""The corpus of realistic NumPy programs (corpus_programs.py, issue 20) through the differential check: each
program run plainly and translated (the first call, then from the cache) and compared - values and exact types,
inputs changed in place, aliasing, stdout, exceptions - then its own arguments and a varied set (other values,
lengths, shapes, step counts) through one translated function. A wrong value always fails.

The graphs, breaks and fallbacks of each program's first call are pinned in ``PINS`` as the translator gives them
today: many programs break or fall back, which later work is to improve; a change shows here and is a one-line
update of the table. ``SOT_CORPUS_PRINT=1`` turns count mismatches into a printout: the measured counts of every
program as table rows ready to paste (values are still checked).

The cpu backend's tier B (kernels compiled to machine code) is off for the corpus unless ``SOT_CORPUS_TIER_B=1``:
the programs with long unrolled loops make hundreds of kernels each, every one a compiler run (minutes on two
cores), while the values are the same either way (tier B is bit-exact; test_cpu_backend.py covers it). So is the
CUDA compile check (``SOT_CUDA_CHECK=1``) unless ``SOT_CORPUS_CUDA_CHECK=1``: each program runs in a forked child,
whose kernels the session's report never sees, and compiling them with NVRTC took 12 minutes.
PYTEST_DONT_REWRITE"""

import contextlib
import json
import os
import sys

import pytest
from harness import in_child
from numpy_differential import Outcome, check, native_loops

import sot
from sot import capture as cap

np = pytest.importorskip("numpy")
import numpy.fft  # noqa: E402,F401 - loaded before any translation: NumPy 2 loads np.fft at its first use, and a
#                   first use inside a translated frame breaks there (the counts would depend on the test order)

from corpus_programs import PROGRAMS, call_args  # noqa: E402 - after NumPy's importorskip

PRINT = os.environ.get("SOT_CORPUS_PRINT") == "1"
TIER_B = os.environ.get("SOT_CORPUS_TIER_B") == "1"
CUDA_CHECK = os.environ.get("SOT_CORPUS_CUDA_CHECK") == "1"

# name: (graphs, breaks, fallbacks) of the first call (Python 3.11, NumPy 2), on every Python and NumPy unless
# PINS_BY_VERSION says otherwise.
PINS = {
    "heat_1d": (1, 0, 0),
    "heat_2d": (1, 0, 0),
    "wave_1d": (1, 0, 0),
    "advection_upwind": (1, 0, 0),
    "game_of_life": (1, 0, 0),
    "jacobi_relaxation": (1, 0, 0),
    "gauss_seidel": (1, 0, 0),
    "nbody_leapfrog": (1, 0, 0),
    "logistic_map": (1, 0, 0),
    "lotka_volterra": (1, 0, 0),
    "sir_model": (1, 0, 0),
    "random_walk_reflect": (1, 0, 0),
    "mandelbrot": (1, 0, 0),
    "shallow_water_1d": (1, 0, 0),
    "burgers": (1, 0, 0),
    "rule30": (1, 0, 0),
    "ising_checkerboard": (1, 0, 0),
    "damped_oscillators": (1, 0, 0),
    "simulate_and_log": (1, 1, 0),
    "power_iteration": (1, 0, 0),
    "conjugate_gradient": (1, 0, 0),
    "least_squares_normal": (1, 0, 0),
    "gram_schmidt": (1, 0, 0),
    "cholesky_solve": (1, 0, 0),
    "pca": (1, 0, 0),
    "triangular_parts": (1, 0, 0),
    "lu_doolittle": (1, 0, 0),
    "expm_taylor": (1, 0, 0),
    "newton_schulz_inverse": (1, 0, 0),
    "polynomial_fit": (1, 0, 0),
    "logistic_regression_gd": (1, 0, 0),
    "mlp_sgd_step": (1, 0, 0),
    "softmax_cross_entropy": (1, 0, 0),
    "kmeans": (1, 1, 0),
    "layer_norm": (1, 0, 0),
    "causal_attention": (1, 0, 0),
    "adam_quadratic": (1, 0, 0),
    "batch_norm_train": (1, 0, 0),
    "one_hot_accuracy": (1, 0, 0),
    "rnn_unrolled": (1, 0, 0),
    "minibatch_linear_sgd": (1, 0, 0),
    "knn_classify": (1, 0, 0),
    "gelu_mlp_inference": (1, 0, 0),
    "train_with_progress": (1, 1, 0),
    "conv1d_sliding": (1, 0, 0),
    "moving_average": (1, 0, 0),
    "fir_filter": (1, 0, 0),
    "power_spectrum": (1, 0, 0),
    "blur_3x3": (1, 0, 0),
    "sobel_edges": (1, 0, 0),
    "histogram_equalize": (1, 0, 0),
    "normalize_gamma": (1, 0, 0),
    "bilinear_resample": (1, 0, 0),
    "denoise_clip": (1, 0, 0),
    "autocorrelation": (1, 0, 0),
    "goertzel": (1, 1, 0),  # (a loop over NumPy scalars alone: CPython runs it; tier C: a native loop op)
    "peak_detect": (1, 0, 0),
    "weighted_sum_genexpr": (1, 0, 0),
    "sgd_dict_params": (1, 0, 0),
    "dict_params_replace": (1, 0, 0),
    "row_iteration": (1, 1, 0),
    "unpack_coordinates": (1, 0, 0),
    "particles_class": (1, 0, 0),
    "dataclass_box": (1, 0, 0),
    "helper_in_loop": (1, 0, 0),
    "sqrt_of_shape": (1, 0, 0),
    "try_solve": (0, 1, 0),
    "list_comprehension_stats": (1, 0, 0),
    "keyword_defaults": (1, 0, 0),
    "closure_factory": (1, 0, 0),
    "summary_string": (1, 0, 0),
    "running_stats_welford": (1, 0, 0),
    "print_summary_table": (1, 2, 0),
    # corpus_programs_wild.py: programs written as people write them (issue 36)
    "heat_insulated_until_steady": (1, 1, 0),
    "periodic_lj_md": (3, 3, 0),
    "monte_carlo_pi_batches": (1, 1, 0),
    "rk4_pendulum": (1, 0, 0),
    "seir_epidemic": (1, 0, 0),
    "traffic_nasch": (1, 0, 0),
    "forest_fire": (1, 0, 0),
    "newton_system": (3, 2, 0),
    "simpson_convergence": (1, 0, 0),
    "qr_eigenvalues": (1, 1, 0),
    "pca_explained": (3, 2, 0),
    "ridge_cv": (1, 0, 0),
    "inverse_iteration": (1, 1, 0),
    "logistic_minibatch": (3, 1, 0),
    "knn_regress": (1, 0, 0),
    "kmeans_model_fit": (3, 2, 0),
    "perceptron_train": (1, 1, 0),
    "gaussian_nb": (1, 2, 0),
    "linreg_momentum": (1, 1, 0),
    "softmax_regression": (1, 0, 0),
    "smooth_find_peaks": (2, 2, 0),
    "median_despike": (1, 0, 0),
    "otsu_threshold": (1, 3, 0),
    "gaussian_blur_edges": (1, 0, 0),
    "resample_zero_crossings": (3, 2, 0),
    "rms_segments": (1, 1, 0),
    "bisection_roots": (9, 1, 0),
    "bootstrap_ci": (1, 0, 0),
    "groupby_normalize": (1, 0, 0),
    "ewma_series": (1, 1, 0),
}

# Entries that differ from PINS: on Python 3.12 and later ("py3.12+"), on one Python ("py3.13"), on NumPy 1.x
# ("numpy1"), where loops of single elements are native loop ops (the cpu backend's tier C on: "native loops"),
# both of the last two ("native loops, numpy1"); where several apply, the later key in this order wins.
PINS_BY_VERSION = {
    "py3.12+": {},
    "numpy1": {},
    "native loops": {
        "goertzel": (1, 0, 0),
        "row_iteration": (1, 0, 0),  # (rows summed and squared in place: tier C's arrays)
        "qr_eigenvalues": (1, 0, 0),
        "ewma_series": (1, 0, 0),
        "heat_insulated_until_steady": (1, 0, 0),  # (a list appended to under an `if`, an exit)
        "linreg_momentum": (1, 0, 0),  # (an exit on math.isfinite, a list appended to after it)
        "monte_carlo_pi_batches": (1, 0, 0),  # (np.count_nonzero of a mask, list items read by an exit)
        "logistic_minibatch": (1, 0, 0),  # (rows picked by index arrays, `lr * X[idx].T` F-ordered, 10 epochs)
        "inverse_iteration": (1, 0, 0),  # (np.linalg.solve through NumPy's own loop, x @ A, an exit)
    },
    "native loops, numpy1": {
        # (tier C calls no NumPy 1.x loop of np.exp, np.log, np.clip or solve: the loops with exits are not native)
        "logistic_minibatch": (3, 1, 0),
        "inverse_iteration": (1, 1, 0),
    },
}


def version_keys():
    keys = []
    if sys.version_info >= (3, 12):
        keys.append("py3.12+")
    keys.append(f"py{sys.version_info[0]}.{sys.version_info[1]}")
    if np.__version__.startswith("1."):
        keys.append("numpy1")
    if native_loops():
        keys.append("native loops")
        if np.__version__.startswith("1."):
            keys.append("native loops, numpy1")
    return keys


def pinned(name):
    counts = PINS.get(name)
    for key in version_keys():
        counts = PINS_BY_VERSION.get(key, {}).get(name, counts)
    return counts


def child_settings():
    """In the child that runs a program (the session's own settings are left as they are): tier B and the CUDA
    compile check as the module's docstring says."""
    sot._sot.graph.tier_b(TIER_B)
    if not CUDA_CHECK:
        sot._sot.graph.cuda_check(False)


def first_call_counts(fn, args, kwargs):
    """The graphs, breaks and fallbacks of a first translated call, counted as ``check`` counts them."""
    sot.reset()
    cap.clear(fn)
    translator = sot.translate.new_translator(records=True)
    translator.check_graphs = True
    Outcome(fn, args, kwargs, translator)
    records = translator.records()
    graphs = sum(len(r["graphs"]) for r in records if r["transformed"] is not None)
    breaks = sum(len(r["breaks"]) for r in records)
    fallbacks = sum(1 for r in records if r["failure"])
    return graphs, breaks, fallbacks


@pytest.fixture(scope="module")
def measured_rows(request):
    rows = []
    yield rows
    if not PRINT:
        return
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(f"\nSOT_CORPUS_PRINT: measured counts ({', '.join(version_keys())}):")
        for name, counts, old in rows:
            note = "" if counts == old else f"  # was {old}"
            print(f"    {name!r}: {counts},{note}".replace("'", '"'))


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_corpus(program, tmp_path, measured_rows):
    args, kwargs = call_args(program, 0)
    variants = [call_args(program, 1)]
    expected = pinned(program.name)
    if not PRINT:
        assert expected is not None, f"{program.name} has no entry in PINS (run with SOT_CORPUS_PRINT=1)"
        graphs, breaks, fallbacks = expected

        def pinned_check():
            child_settings()
            check(program.fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, variants=variants, **kwargs)

        in_child(pinned_check)
        return
    out = tmp_path / "counts.json"

    def measure_then_check():
        child_settings()
        counts = first_call_counts(program.fn, args, kwargs)
        out.write_text(json.dumps(counts))
        graphs, breaks, fallbacks = counts
        check(program.fn, *args, graphs=graphs, breaks=breaks, fallbacks=fallbacks, variants=variants, **kwargs)

    try:
        in_child(measure_then_check)
    finally:
        if out.exists():
            measured_rows.append((program.name, tuple(json.loads(out.read_text())), expected))
