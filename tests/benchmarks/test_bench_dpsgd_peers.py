"""The JAX-native peers of ``benchmarks/bench_dpsgd.py`` compute jaxaudit's DP-GD run.

The benchmark times jax_privacy 2.0 (``clipped_grad`` + ``gaussian_privatizer``, on a flax
``nn.Conv`` CNN and on jaxaudit's im2col SmallCNN) and ``optax.contrib.dpsgd`` next to jaxaudit;
a timing means something only if they train the same model with the same step. The reference is
jaxaudit's own private step and ``train_run``: at σ = 0 and from the same parameters, every peer's
parameter updates and canary score agree with jaxaudit's to 1e-4 relative (the script refuses to
time otherwise), a peer with the realised batch size as divisor (|D⁻| + 1) is refused, and each
peer's noise has jaxaudit's standard deviation ησC/n̄. Tiny sizes: 8 random images, 2 steps;
still in the slow suite, because each implementation's SmallCNN step compiles for 5–20 s on a
2-core CPU (3–3.5 minutes for the module there, under load).
"""

import importlib.util
from pathlib import Path

import jax
import numpy as np
import pytest

pytest.importorskip("jax_privacy")
pytestmark = pytest.mark.slow

from jaxaudit.dpsgd import SmallCNN  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_dpsgd", ROOT / "benchmarks" / "bench_dpsgd.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def setting():
    kx, ky, kp = jax.random.split(jax.random.key(0), 3)
    x = np.asarray(jax.random.uniform(kx, (8, 28, 28)), np.float32)
    y = np.asarray(jax.random.randint(ky, (8,), 0, 10), np.int32)
    canary = (np.zeros((28, 28), np.float32), 3)
    params = SmallCNN().init(kp, x[:1])
    return x, y, canary, params


def _batch(x, y, canary):
    images = np.concatenate([x, canary[0][None]])[..., None]
    return images, np.concatenate([y, [canary[1]]]).astype(np.int32)


def test_peers_agree_with_jaxaudit_at_zero_noise(bench, setting):
    diffs = bench.check_peer_agreement(*setting, steps=2, clip=1.0, lr=1.0)
    assert set(diffs) == set(bench.PEERS)
    assert all(0.0 <= d <= bench.AGREEMENT_TOLERANCE for d in diffs.values()), diffs


def test_a_peer_dividing_by_the_realised_batch_size_is_refused(bench, setting):
    x, y, canary, _ = setting
    images, labels = _batch(x, y, canary)
    wrong = bench.make_peer("jax_privacy_im2col", images, labels, sigma=0.0, clip=1.0, lr=1.0,
                            normalizer=float(labels.shape[0]))  # |D⁻| + 1, not n̄ = |D⁻|
    with pytest.raises(RuntimeError, match="jax_privacy_im2col"):
        bench.check_peer_agreement(*setting, steps=2, peers={"jax_privacy_im2col": wrong})


@pytest.mark.parametrize("name", ["jax_privacy_im2col", "optax"])
def test_peer_noise_has_jaxaudit_standard_deviation(bench, setting, name):
    x, y, canary, params = setting
    images, labels = _batch(x, y, canary)
    sigma, clip, lr = 0.5, 2.0, 0.3
    run = bench.make_peer(name, images, labels, sigma=sigma, clip=clip, lr=lr,
                          normalizer=float(x.shape[0]))
    ratio = bench.peer_noise_ratio(x, y, canary, params, run, sigma=sigma, clip=clip, lr=lr)
    assert abs(ratio - 1.0) < 0.03, ratio  # standard error ≈ 0.005
