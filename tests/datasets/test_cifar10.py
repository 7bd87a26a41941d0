"""CIFAR-10 loader on generated batches in the exact python-pickle format (the real files cannot
be shipped): HWC order, checksum refusal, corrupt/foreign/missing files, offline file:// download.
"""

import hashlib
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest

from jaxaudit.cli.main import main
from jaxaudit.datasets import cifar10, load_cifar10
from jaxaudit.datasets.cifar10 import verify_cifar10_files

BATCH_DIR = Path("cifar10") / "cifar-10-batches-py"


def _batch(rng, n):
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(v) for v in rng.integers(0, 10, n)]
    return {
        b"batch_label": b"generated batch",
        b"labels": labels,
        b"data": data,
        b"filenames": [f"img_{i}.png".encode() for i in range(n)],
    }


def _write(folder, names, n=200, seed=0, protocol=2):
    """Write generated batches ``names`` into ``folder``; return {name: dict written}."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    written = {}
    for name in names:
        entry = _batch(rng, n)
        (folder / name).write_bytes(pickle.dumps(entry, protocol=protocol))
        written[name] = entry
    return written


def _md5(blob):
    return hashlib.md5(blob, usedforsecurity=False).hexdigest()


def _hwc(data):
    """Independent CHW -> HWC: pixel (h, w) of channel c is data[c*1024 + h*32 + w]."""
    n = data.shape[0]
    out = np.empty((n, 32, 32, 3), np.uint8)
    for c in range(3):
        for h in range(32):
            out[:, h, :, c] = data[:, c * 1024 + h * 32 : c * 1024 + h * 32 + 32]
    return out


@pytest.mark.parametrize("protocol", [2, 5])
def test_generated_train_split_loads_unverified(tmp_path, protocol):
    written = _write(tmp_path / BATCH_DIR, cifar10.SPLITS["train"], n=200, seed=1,
                     protocol=protocol)
    images, labels = load_cifar10("train", data_dir=tmp_path, verify=False)
    assert images.shape == (1000, 32, 32, 3) and images.dtype == np.uint8
    assert labels.shape == (1000,) and labels.dtype == np.int32
    data = np.concatenate([written[n][b"data"] for n in cifar10.SPLITS["train"]])
    np.testing.assert_array_equal(images, _hwc(data))
    np.testing.assert_array_equal(
        labels, np.concatenate([written[n][b"labels"] for n in cifar10.SPLITS["train"]]))
    # first row of the red plane is the first 32 bytes
    np.testing.assert_array_equal(images[0, 0, :, 0], data[0, :32])


def test_test_split_and_env_var(tmp_path, monkeypatch):
    written = _write(tmp_path / BATCH_DIR, ["test_batch"], n=300, seed=2)
    monkeypatch.setenv("JAXAUDIT_DATA", str(tmp_path))
    images, labels = load_cifar10("test", verify=False)
    assert images.shape == (300, 32, 32, 3)
    np.testing.assert_array_equal(images, _hwc(written["test_batch"][b"data"]))
    np.testing.assert_array_equal(labels, written["test_batch"][b"labels"])


def test_unlisted_digest_refused_by_default(tmp_path):
    _write(tmp_path / BATCH_DIR, ["test_batch"], seed=3)
    with pytest.raises(ValueError, match="checksum mismatch.*test_batch") as info:
        load_cifar10("test", data_dir=tmp_path)
    assert cifar10.BATCH_MD5["test_batch"] in str(info.value)
    assert "verify=False" in str(info.value)


def test_published_digest_table():
    assert set(cifar10.BATCH_MD5) == {*cifar10.SPLITS["train"], *cifar10.SPLITS["test"]}
    for digest in (*cifar10.BATCH_MD5.values(), cifar10.ARCHIVE_MD5):
        assert len(digest) == 32 and int(digest, 16) >= 0
    assert len(cifar10.ARCHIVE_SHA256) == 64 and int(cifar10.ARCHIVE_SHA256, 16) >= 0


def test_listed_digest_accepted(tmp_path, monkeypatch):
    """The verified path: a file whose MD5 is the listed one is read."""
    folder = tmp_path / BATCH_DIR
    _write(folder, ["test_batch"], seed=4)
    monkeypatch.setitem(cifar10.BATCH_MD5, "test_batch", _md5((folder / "test_batch").read_bytes()))
    images, _ = load_cifar10("test", data_dir=tmp_path)
    assert images.shape == (200, 32, 32, 3)


def _corrupt_cases(rng):
    good = _batch(rng, 10)

    class Foreign:
        def __reduce__(self):
            return (os.getcwd, ())

    return {
        "truncated": pickle.dumps(good, protocol=2)[:-100],
        "not a pickle": b"this is not a CIFAR-10 batch",
        "foreign class": pickle.dumps({b"data": Foreign()}, protocol=2),
        "not a dict": pickle.dumps([1, 2, 3], protocol=2),
        "wrong width": pickle.dumps({**good, b"data": good[b"data"][:, :3000]}, protocol=2),
        "wrong dtype": pickle.dumps({**good, b"data": good[b"data"].astype(np.int16)}, protocol=2),
        "label count": pickle.dumps({**good, b"labels": good[b"labels"][:-1]}, protocol=2),
        "label range": pickle.dumps({**good, b"labels": [10] * 10}, protocol=2),
        "no data": pickle.dumps({b"labels": good[b"labels"]}, protocol=2),
    }


@pytest.mark.parametrize("case", ["truncated", "not a pickle", "foreign class", "not a dict",
                                  "wrong width", "wrong dtype", "label count", "label range",
                                  "no data"])
def test_corrupt_or_foreign_file_is_value_error(tmp_path, case):
    folder = tmp_path / BATCH_DIR
    folder.mkdir(parents=True)
    (folder / "test_batch").write_bytes(_corrupt_cases(np.random.default_rng(5))[case])
    with pytest.raises(ValueError, match="test_batch") as info:
        load_cifar10("test", data_dir=tmp_path, verify=False)
    if case == "foreign class":  # refused by the restricted unpickler, never called
        assert "unexpected class" in str(info.value)


def test_missing_file_names_the_folder(tmp_path):
    _write(tmp_path / BATCH_DIR, ["data_batch_1", "data_batch_2"], n=10, seed=6)
    with pytest.raises(FileNotFoundError) as info:
        load_cifar10("train", data_dir=tmp_path, verify=False)
    msg = str(info.value)
    assert "data_batch_3" in msg and str(tmp_path / BATCH_DIR) in msg
    assert "cannot be shipped" in msg and "download=True" in msg and "JAXAUDIT_DATA" in msg
    assert "jaxaudit data info cifar10 --download" in msg


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="split"):
        load_cifar10("validation", data_dir=tmp_path)
    with pytest.raises(ValueError, match="verify"):
        load_cifar10("test", data_dir=tmp_path, verify="no")


def _mirror(tmp_path, seed=7, n=50):
    """A file:// mirror holding a generated cifar-10-python.tar.gz (all six batches)."""
    staging = tmp_path / "staging" / "cifar-10-batches-py"
    written = _write(staging, cifar10.BATCH_MD5, n=n, seed=seed)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with tarfile.open(mirror / cifar10.ARCHIVE, "w:gz") as tar:
        tar.add(staging, arcname="cifar-10-batches-py")
    return mirror, written


def test_download_unlisted_archive_refused_and_not_kept(tmp_path, monkeypatch):
    mirror, _ = _mirror(tmp_path)
    monkeypatch.setattr(cifar10, "ARCHIVE_URLS", (mirror.as_uri() + "/" + cifar10.ARCHIVE,))
    target = tmp_path / "data"
    with pytest.raises(ValueError, match="checksum mismatch.*cifar-10-python.tar.gz"):
        load_cifar10("test", data_dir=target, download=True)
    assert list((target / "cifar10").rglob("*")) == [target / BATCH_DIR]


def test_download_verified_with_listed_digests(tmp_path, monkeypatch):
    """Download → archive SHA-256 and MD5 → extract → per-batch MD5, against a file:// mirror
    whose (generated) files are listed for the test."""
    mirror, written = _mirror(tmp_path)
    blob = (mirror / cifar10.ARCHIVE).read_bytes()
    monkeypatch.setattr(cifar10, "ARCHIVE_SHA256", hashlib.sha256(blob).hexdigest())
    monkeypatch.setattr(cifar10, "ARCHIVE_MD5", _md5(blob))
    for name in written:
        raw = (tmp_path / "staging" / "cifar-10-batches-py" / name).read_bytes()
        monkeypatch.setitem(cifar10.BATCH_MD5, name, _md5(raw))
    dead = (tmp_path / "nowhere").as_uri() + "/" + cifar10.ARCHIVE
    monkeypatch.setattr(cifar10, "ARCHIVE_URLS", (dead, mirror.as_uri() + "/" + cifar10.ARCHIVE))
    target = tmp_path / "data"
    images, labels = load_cifar10("test", data_dir=target, download=True)
    np.testing.assert_array_equal(images, _hwc(written["test_batch"][b"data"]))
    # only the missing batch was extracted, the archive and temporary files are gone
    assert sorted(p.name for p in (target / "cifar10").rglob("*")) == [
        "cifar-10-batches-py", "test_batch"]
    images, labels = load_cifar10("train", data_dir=target, download=True)
    assert images.shape == (250, 32, 32, 3) and labels.shape == (250,)
    statuses = {s.key: s.status for s in verify_cifar10_files(target)}
    assert set(statuses.values()) == {"ok"} and len(statuses) == 6


def test_download_unverified_and_dead_mirrors(tmp_path, monkeypatch):
    mirror, written = _mirror(tmp_path, n=20)
    monkeypatch.setattr(cifar10, "ARCHIVE_URLS", (mirror.as_uri() + "/" + cifar10.ARCHIVE,))
    images, _ = load_cifar10("train", data_dir=tmp_path / "a", download=True, verify=False)
    assert images.shape == (100, 32, 32, 3)
    monkeypatch.setattr(cifar10, "ARCHIVE_URLS", ((tmp_path / "nowhere").as_uri() + "/x",))
    with pytest.raises(FileNotFoundError, match="could not download"):
        load_cifar10("test", data_dir=tmp_path / "b", download=True, verify=False)
    assert not any((tmp_path / "b" / "cifar10").rglob("*.part"))


def test_download_not_an_archive(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / cifar10.ARCHIVE).write_bytes(b"\x1f\x8b garbage")
    monkeypatch.setattr(cifar10, "ARCHIVE_URLS", (mirror.as_uri() + "/" + cifar10.ARCHIVE,))
    with pytest.raises(ValueError, match="gzipped tar archive"):
        load_cifar10("test", data_dir=tmp_path / "data", download=True, verify=False)


def test_data_cli_verify_and_missing(tmp_path, capsys):
    folder = tmp_path / BATCH_DIR
    _write(folder, ["test_batch"], n=5, seed=8)
    assert main(["data", "verify", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "bad       cifar10/cifar-10-batches-py/test_batch" in out
    assert main(["data", "info", "cifar10", "--data-dir", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and str(tmp_path / "empty" / BATCH_DIR) in err

