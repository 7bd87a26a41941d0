"""``jaxaudit rdp --dataset cifar10``: the clean error without data, and a tiny end-to-end audit
pipeline (audit_data → CifarCNN → canary runs) on generated CIFAR-format batches.

The CLI has no way to bypass the checksum check (the real batches cannot be shipped and
generated ones have unlisted digests), so the end-to-end run is at the library level with
``verify=False``, the CLI's own steps: ``audit_data``, ``model_by_name``, ``blank_canary``,
``worst_case_label`` and the canary runs (R = 2 runs per world, T = 2 steps, |D⁻| = 4).
"""

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.datasets import load_cifar10
from jaxaudit.datasets.audit_split import AUDIT_DATASETS as DATASETS
from jaxaudit.datasets.audit_split import audit_data
from jaxaudit.dpsgd import DpsgdConfig, blank_canary, canary_runs, model_by_name, worst_case_label
from jaxaudit.dpsgd.models import MODELS, CifarCNN

BATCHES = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5")


def _write_train_batches(root, n=6, seed=0):
    folder = root / "cifar10" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for name in BATCHES:
        entry = {b"batch_label": b"generated", b"data": rng.integers(0, 256, (n, 3072), np.uint8),
                 b"labels": [int(v) for v in rng.integers(0, 10, n)],
                 b"filenames": [b"x.png"] * n}
        (folder / name).write_bytes(pickle.dumps(entry, protocol=2))
    return folder


def test_choices_come_from_experiment():
    assert "cifar10" in DATASETS and "cifar_cnn" in MODELS
    assert isinstance(model_by_name("cifar_cnn"), CifarCNN)


def test_cli_without_data_says_where_to_put_the_files(tmp_path, capsys):
    args = ["rdp", "--dataset", "cifar10", "--model", "cifar_cnn", "--dataset-size", "4",
            "--public-size", "0", "--steps", "2", "--runs", "2", "--quiet",
            "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not found" in err
    assert str(tmp_path / "data" / "cifar10" / "cifar-10-batches-py") in err
    assert "cannot be shipped" in err and "download=True" in err


def test_audit_data_refuses_unlisted_files_by_default(tmp_path):
    _write_train_batches(tmp_path)
    with pytest.raises(ValueError, match="checksum mismatch.*data_batch_1"):
        audit_data(jax.random.key(0), "cifar10", 4, 0, data_dir=tmp_path)
    with pytest.raises(ValueError, match="verify"):
        audit_data(jax.random.key(0), "synthetic", 4, 0, verify=False)


@pytest.mark.slow  # ~12 s of CPU, nearly all XLA compilation of one CifarCNN DP step
def test_end_to_end_on_generated_batches(tmp_path):
    _write_train_batches(tmp_path, n=6, seed=1)
    (x, y), (xp, yp) = audit_data(jax.random.key(2), "cifar10", 4, 3, data_dir=tmp_path,
                                        verify=False)
    assert x.shape == (4, 32, 32, 3) and x.dtype == np.float32 and y.dtype == np.int32
    assert xp.shape == (3, 32, 32, 3) and yp.shape == (3,)
    # the split is the MNIST one: a seeded permutation of the train split, pixels / 255
    images, labels = load_cifar10("train", data_dir=tmp_path, verify=False)
    order = np.random.default_rng(2).permutation(images.shape[0])[:7]
    np.testing.assert_array_equal(x, images[order[:4]] / np.float32(255))
    np.testing.assert_array_equal(yp, labels[order[4:]])

    model = model_by_name("cifar_cnn")
    # parameters in model.init's structure from seeded numpy draws (compiling flax's
    # initialisers alone takes seconds on CPU; the CLI calls model.init or pretrain here)
    shapes = jax.eval_shape(model.init, jax.random.key(0),
                            jax.ShapeDtypeStruct((1, 32, 32, 3), jnp.float32))
    rng = np.random.default_rng(3)
    init = jax.tree.map(lambda s: jnp.asarray(
        rng.normal(0, int(np.prod(s.shape[:-1]) or 1) ** -0.5, s.shape).astype(np.float32)),
        shapes)
    canary = blank_canary(x.shape[1:])
    label = worst_case_label(model, init, canary)
    # R = 2 runs per world, T = 2 steps, one vmapped call (ghost-clipping path)
    in_s, out_s = canary_runs(jax.random.key(4), model, init, (x, y), (canary, label),
                              DpsgdConfig(noise_multiplier=1.0, clip_norm=1.0, steps=2,
                                          learning_rate=0.01), num_runs=2)
    scores = np.concatenate([in_s, out_s])
    assert in_s.shape == (2,) and out_s.shape == (2,)
    assert np.isfinite(scores).all() and len(set(scores.tolist())) == 4


@pytest.mark.parametrize("dataset", ["synthetic", "mnist"])
def test_cifar_cnn_on_28x28_images_is_a_clean_error(tmp_path, capsys, dataset):
    """`rdp --model cifar_cnn --dataset synthetic` was a ZeroDivisionError traceback
    from inside JAX's reshape; now exit 2 naming both flags, before any data or run folder."""
    out = tmp_path / "run"
    assert main(["rdp", "--model", "cifar_cnn", "--dataset", dataset, "--steps", "2", "--runs",
                 "2", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--model cifar_cnn" in err and "--dataset cifar10" in err and "Traceback" not in err
    assert not out.exists()
