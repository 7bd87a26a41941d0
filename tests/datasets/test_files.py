"""Data-directory resolution, verification and (offline, file://) download."""

import gzip
import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest

from jaxaudit.datasets import _files, load_mnist, load_planetoid, resolve_data_dir
from jaxaudit.datasets._files import verify_files

SHARED = resolve_data_dir()


def test_resolution_order(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXAUDIT_DATA", str(tmp_path / "env"))
    assert resolve_data_dir(tmp_path / "arg") == (tmp_path / "arg").resolve()
    assert resolve_data_dir() == (tmp_path / "env").resolve()
    monkeypatch.delenv("JAXAUDIT_DATA")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir() == (tmp_path / "home" / ".cache" / "jaxaudit").resolve()


@pytest.mark.needs_data("cora", "citeseer")
def test_table_matches_shared_files():
    """Every file present in the shared data folder has the checksum of the table."""
    statuses = {s.key: s.status for s in verify_files()}
    for key, expected in _files.SHA256.items():
        assert statuses[key] == "ok", key
        assert _files.sha256_file(SHARED / key) == expected
    for key, expected in _files.SHA256_GUNZIPPED.items():
        if (SHARED / key).is_file():
            assert statuses[key] == "ok", key
            assert hashlib.sha256(gzip.open(SHARED / key).read()).hexdigest() == expected


@pytest.mark.needs_data("mnist")
def test_verify_reports_bad_and_missing(tmp_path):
    (tmp_path / "mnist").mkdir()
    src = SHARED / "mnist" / "t10k-labels-idx1-ubyte.gz"
    (tmp_path / "mnist" / src.name).write_bytes(src.read_bytes()[:-10])
    statuses = {s.key: s.status for s in verify_files(tmp_path)}
    assert statuses["mnist/t10k-labels-idx1-ubyte.gz"] == "bad"
    assert statuses["planetoid/ind.cora.x"] == "missing"


def _mirror(tmp_path, sub, pattern):
    source = tmp_path / "mirror"
    source.mkdir()
    for f in (SHARED / sub).glob(pattern):
        shutil.copy(f, source / f.name)
    return source


@pytest.mark.needs_data("cora")
def test_download_file_url(monkeypatch, tmp_path):
    source = _mirror(tmp_path, "planetoid", "ind.cora.*")
    monkeypatch.setitem(_files.BASE_URLS, "planetoid", (source.as_uri() + "/",))
    target = tmp_path / "data"
    graph = load_planetoid("cora", data_dir=target, download=True)
    assert graph.num_nodes == 2708
    assert sorted(p.name for p in (target / "planetoid").iterdir()) == sorted(
        p.name for p in source.iterdir()
    )


@pytest.mark.needs_data("mnist")
def test_download_tampered_is_refused_and_not_kept(monkeypatch, tmp_path):
    source = _mirror(tmp_path, "mnist", "t10k-*")
    data = bytearray((source / "t10k-labels-idx1-ubyte.gz").read_bytes())
    data[100] ^= 0xFF
    (source / "t10k-labels-idx1-ubyte.gz").write_bytes(bytes(data))
    monkeypatch.setitem(_files.BASE_URLS, "mnist", (source.as_uri() + "/",))
    target = tmp_path / "data"
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_mnist(data_dir=target, download=True)
    assert [p.name for p in (target / "mnist").iterdir()] == ["t10k-images-idx3-ubyte.gz"]


@pytest.mark.needs_data("mnist")
def test_download_falls_back_to_next_mirror(monkeypatch, tmp_path):
    source = _mirror(tmp_path, "mnist", "t10k-*")
    dead = Path(tmp_path / "nowhere").as_uri() + "/"
    monkeypatch.setitem(_files.BASE_URLS, "mnist", (dead, source.as_uri() + "/"))
    images, labels = load_mnist(data_dir=tmp_path / "data", download=True)
    assert images.shape == (10000, 28, 28)
    monkeypatch.setitem(_files.BASE_URLS, "mnist", (dead,))
    with pytest.raises(FileNotFoundError, match="could not download"):
        load_mnist(data_dir=tmp_path / "other", download=True)
    assert not any((tmp_path / "other" / "mnist").iterdir())
    assert np.bincount(labels).sum() == 10000


def test_fetch_errors_of_the_folder_are_not_blamed_on_the_mirrors(monkeypatch, tmp_path):
    """A full disk was reported as 'could not download' after trying every mirror (a
    FileNotFoundError); a folder in the way of a file was a raw FileExistsError; a broken HTTP
    transfer (IncompleteRead, not an OSError) escaped the mirror fallback."""
    import errno
    import http.client

    calls = []

    def full(url, dest):
        calls.append(url)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files, "fetch_url", full)
    with pytest.raises(OSError, match="cannot write to the data folder .*No space left") as info:
        _files.fetch_first(["a://1", "a://2"], tmp_path / "d", "x", lambda tmp: None)
    assert not isinstance(info.value, FileNotFoundError) and calls == ["a://1"]
    assert list((tmp_path / "d").iterdir()) == []  # the temporary file is removed

    (tmp_path / "blocked").write_text("a file")
    with pytest.raises(ValueError, match="blocked is a file, not a folder"):
        _files.fetch_first(["a://1"], tmp_path / "blocked" / "planetoid", "x", lambda tmp: None)

    def flaky(url, dest):
        if url == "a://1":
            raise http.client.IncompleteRead(b"partial", 10)
        Path(dest).write_bytes(b"payload")

    got = []
    monkeypatch.setattr(_files, "fetch_url", flaky)
    _files.fetch_first(["a://1", "a://2"], tmp_path / "e", "x",
                       lambda tmp: got.append(tmp.read_bytes()))
    assert got == [b"payload"]
