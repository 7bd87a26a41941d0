"""MNIST test split against its published label counts; IDX parsing refuses malformed files."""

import gzip
import shutil
import struct

import numpy as np
import pytest

from jaxaudit.datasets import load_mnist, resolve_data_dir
from jaxaudit.datasets.mnist import _read_idx

# LeCun et al.: label counts of the 10 000-image test split (LeCun et al.'s published table).
TEST_LABEL_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.mark.needs_data("mnist")
def test_test_split():
    images, labels = load_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and labels.dtype == np.int32
    assert images.min() == 0 and images.max() == 255
    np.testing.assert_array_equal(np.bincount(labels, minlength=10), TEST_LABEL_COUNTS)
    # Published normalisation constants of the test split: mean 0.1325, std 0.3105 (of 255).
    assert abs(images.mean() / 255 - 0.1325) < 5e-4
    assert abs(images.std() / 255 - 0.3105) < 5e-4


def test_bad_split():
    with pytest.raises(ValueError, match="split"):
        load_mnist("validation")


@pytest.mark.needs_data("mnist")
def test_train_missing_gives_remedies(tmp_path):
    shutil.copytree(resolve_data_dir() / "mnist", tmp_path / "mnist")
    with pytest.raises(FileNotFoundError) as info:
        load_mnist("train", data_dir=tmp_path)
    msg = str(info.value)
    assert "train-images-idx3-ubyte.gz" in msg and str(tmp_path / "mnist") in msg
    assert "download=True" in msg and "JAXAUDIT_DATA" in msg


@pytest.mark.needs_data("mnist")
def test_truncated_copy_refused(tmp_path):
    path = _copy_test_split(tmp_path) / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(ValueError, match="checksum mismatch.*t10k-images"):
        load_mnist(data_dir=tmp_path)


def _copy_test_split(tmp_path):
    (tmp_path / "mnist").mkdir(exist_ok=True)
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(resolve_data_dir() / "mnist" / name, tmp_path / "mnist" / name)
    return tmp_path / "mnist"


@pytest.mark.needs_data("mnist")
def test_other_gzip_container_accepted(tmp_path):
    """Mirrors differ in the gzip header/compression: the decompressed content is what counts."""
    folder = _copy_test_split(tmp_path)
    path = folder / "t10k-labels-idx1-ubyte.gz"
    payload = gzip.decompress(path.read_bytes())
    recompressed = gzip.compress(payload, compresslevel=1, mtime=0)
    assert recompressed != path.read_bytes()
    path.write_bytes(recompressed)
    _, labels = load_mnist(data_dir=tmp_path)
    np.testing.assert_array_equal(np.bincount(labels), TEST_LABEL_COUNTS)


@pytest.mark.needs_data("mnist")
def test_altered_content_refused(tmp_path):
    """A valid gzip file whose content differs by one label is refused."""
    folder = _copy_test_split(tmp_path)
    path = folder / "t10k-labels-idx1-ubyte.gz"
    payload = bytearray(gzip.decompress(path.read_bytes()))
    payload[5000] = (payload[5000] + 1) % 10
    path.write_bytes(gzip.compress(bytes(payload)))
    with pytest.raises(ValueError, match="checksum mismatch.*decompressed content"):
        load_mnist(data_dir=tmp_path)


def _write_idx(path, magic, dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(f">{1 + len(dims)}I", magic, *dims) + payload)


def test_read_idx_structure(tmp_path):
    """The IDX header and length checks applied after the checksum."""
    good = tmp_path / "good.gz"
    _write_idx(good, 2049, (5,), bytes([0, 1, 2, 3, 9]))
    np.testing.assert_array_equal(_read_idx(good, 2049, (5,)), [0, 1, 2, 3, 9])
    short = tmp_path / "short.gz"
    _write_idx(short, 2049, (5,), bytes([0, 1, 2]))
    with pytest.raises(ValueError, match="length mismatch"):
        _read_idx(short, 2049, (5,))
    wrong_magic = tmp_path / "magic.gz"
    _write_idx(wrong_magic, 2051, (5,), bytes(5))
    with pytest.raises(ValueError, match="magic"):
        _read_idx(wrong_magic, 2049, (5,))
    corrupt = tmp_path / "corrupt.gz"
    corrupt.write_bytes(good.read_bytes()[:-6])
    with pytest.raises(ValueError, match="gzip"):
        _read_idx(corrupt, 2049, (5,))
