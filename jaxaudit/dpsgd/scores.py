"""Canary scores from files, and the numbers an audit of scores needs besides the scores.

* :func:`load_scores`: one world's canary scores saved with ``numpy.save`` by any training code
  (Opacus, torch, JAX), identified before they are read (a ``torch.save`` file, an ``.npz``, a
  pickle or a text file is refused saying what it is) and checked for the audit.
* :func:`file_sha256`: the digest that identifies a score file in a run configuration.
* :func:`min_scores_per_world`: fewest scores per world with which the lower bounds can show
  anything.
* :func:`accountant_epsilon`: ε at δ of the audited training, by the RDP or the PLD accountant.

Used by :func:`jaxaudit.pipelines.run_scores_audit` (``jaxaudit rdp --scores``) and the
notebooks; docs/opacus.md.
"""

from __future__ import annotations

import functools
import hashlib
import math
import warnings
import zipfile
from pathlib import Path

import numpy as np

from jaxaudit._validation import check_choice, check_probability
from jaxaudit._validation.paths import check_memory

__all__ = ["MIN_SCORES", "accountant_epsilon", "file_sha256", "load_scores",
           "min_scores_per_world"]

#: Fewest scores per world :func:`load_scores` accepts (the audit splits each world in parts).
MIN_SCORES = 4


#: The pickle header of a legacy (pre-1.6, non-zip) ``torch.save`` file: protocol 2, then the
#: magic number 0x1950a86a20f9469cfc6c that ``torch.load`` checks first.
_TORCH_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19."


def _not_npy(path: Path, name: str, what: str) -> ValueError:
    return ValueError(f"{name}: {path} is not a .npy array saved with numpy.save: {what}")


def _identify_zip(path: Path, name: str) -> ValueError:
    """A zip archive given as scores: a ``torch.save`` file, an ``.npz`` or something else."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except zipfile.BadZipFile as err:
        return _not_npy(path, name, f"a damaged zip archive ({err})")
    if any(n.endswith("data.pkl") or n.endswith("/version") for n in names):
        return _not_npy(path, name, "this is a PyTorch file (torch.save); save the scores with "
                        "numpy.save(path, tensor.detach().cpu().numpy())")
    if names and all(n.endswith(".npy") for n in names):
        return ValueError(f"{name}: {path} holds several arrays (.npz: {', '.join(names[:4])}); "
                          "save one 1-D array with numpy.save")
    return _not_npy(path, name, f"a zip archive ({len(names)} member(s))")


def _read_npy(path: Path, name: str) -> np.ndarray:
    """The array of a ``.npy`` file, after checking what the file really is, that its header
    fits its size (a 200-byte file whose header claims 10¹² floats is refused before any memory
    is allocated) and that the array and its float64 copy fit in the memory available (an
    8 GiB file on a smaller machine is refused naming it, before it is read); pickles are never
    loaded."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
            raise _identify_zip(path, name)
        f.seek(0)
        if f.read(len(_TORCH_LEGACY_MAGIC)) == _TORCH_LEGACY_MAGIC:
            raise _not_npy(path, name, "this is a PyTorch file (torch.save, legacy format); save "
                           "the scores with numpy.save(path, tensor.detach().cpu().numpy())")
        if head[:1] == b"\x80":
            raise _not_npy(path, name, "a Python pickle; save a float array with numpy.save")
        if not head.startswith(b"\x93NUMPY"):
            raise _not_npy(path, name, f"it starts with {head[:8]!r}, not the .npy magic "
                           "b'\\x93NUMPY' (a text or other file renamed .npy?)")
        f.seek(0)
        try:
            version = np.lib.format.read_magic(f)
            reader = {(1, 0): np.lib.format.read_array_header_1_0,
                      (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if reader is None:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = reader(f, max_header_size=10_000)
        except (ValueError, OSError, EOFError, SyntaxError) as err:
            raise _not_npy(path, name, f"a damaged .npy header ({err})") from err
        if dtype.hasobject or dtype.fields is not None:
            raise _not_npy(path, name, f"dtype {dtype} holds Python objects or records (pickled "
                           "data is never loaded); save a float array")
        data = size - f.tell()
        need = math.prod(shape) * dtype.itemsize
        if need != data:
            raise ValueError(f"{name}: {path} is a damaged .npy file: its header claims shape "
                             f"{shape} of {dtype} ({need} bytes of data) but the file holds "
                             f"{data} bytes after the header (truncated or corrupt; save it "
                             "again with numpy.save)")
        # the array and its float64 copy must fit in memory: said before anything is read
        check_memory(name, need + 8 * math.prod(shape),
                     f"{path} (shape {shape} of {dtype}, {need / 2**30:.3g} GiB)")
        array = np.fromfile(f, dtype=dtype, count=math.prod(shape))
    return array.reshape(shape, order="F" if fortran else "C")


def load_scores(path: str | Path, name: str = "scores") -> np.ndarray:
    """Canary scores of one world saved with ``numpy.save``, checked for the audit.

    The file is identified before it is read: a ``torch.save`` file (a zip or legacy pickle, even
    when named ``.npy``), an ``.npz``, a pickle or a text file is refused with a message that
    says what it is; a ``.npy`` whose header claims more (or less) data than the file holds is
    refused before anything is allocated; object arrays are never unpickled. float32 and
    float64 scores are used as they are; float16 and integer scores are converted to float64
    with a ``UserWarning`` (float16 has 11 significant bits: distinct losses can collapse into
    ties, which weakens the threshold tests; integers are accepted as already-rounded scores).

    Args:
      path: the ``.npy`` file (one score per training run, e.g. −loss of the canary on the final
        model, from any training code: Opacus, torch, JAX).
      name: how errors name the file (e.g. ``"--scores IN"``).

    Returns:
      The scores as a float64 array of shape (R,).

    Raises:
      FileNotFoundError: ``path`` does not exist.
      ValueError: ``path`` is not a ``.npy`` array (saying what it is instead), its header does
        not match its size, the array and its float64 copy do not fit in the memory available
        (checked from the header, before reading), or the array is not 1-D real numbers, holds NaN or infinite values,
        or has fewer than :data:`MIN_SCORES` scores.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{name}: score file {path} not found")
    scores = _read_npy(path, name)
    if scores.ndim != 1 or scores.dtype.kind not in "fiu":
        raise ValueError(f"{name}: {path} must hold a 1-D floating-point array (one score per run), "
                         f"got dtype {scores.dtype} and shape {scores.shape}")
    if scores.dtype.kind in "iu" or scores.dtype.itemsize < 4:
        warnings.warn(f"{name}: {path} holds {scores.dtype} scores; converted to float64 (float16 "
                      "rounds distinct scores into ties and integers are taken as rounded scores: "
                      "save float32 or float64 scores)", UserWarning, stacklevel=2)
    nan, inf = int(np.isnan(scores).sum()), int(np.isinf(scores).sum())
    if nan or inf:
        first = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"{name}: {path} holds {nan} NaN and {inf} infinite score(s) (the first "
                         f"at index {first}); every score must be finite")
    if scores.shape[0] < MIN_SCORES:
        raise ValueError(f"{name}: {path} holds {scores.shape[0]} score(s); the audit needs at "
                         f"least {MIN_SCORES} per world")
    return scores.astype(np.float64)


def min_scores_per_world(confidence: float = 0.95) -> int:
    """Fewest scores per world with which the threshold-test bound can be positive at all.

    The smallest n for which n perfectly separated scores per world (every IN score above every
    OUT score) give :func:`jaxaudit.renyi.threshold_renyi_lower_bound` > 0 at α = 2 and this
    confidence: with fewer, the held-out Clopper–Pearson intervals are so wide that no data
    can show anything (14 at confidence 0.95, 16 at 0.99), and the DV bound is no better. Computed with the
    bound itself, so it follows any change of the test.

    Args:
      confidence: coverage of the lower bounds, in (0, 1); default 0.95.

    Returns:
      n (an int ≥ :data:`MIN_SCORES`; 10 000 if none up to it works).
    """
    check_probability("confidence", confidence, open_low=True, open_high=True)
    return _min_scores_per_world(float(confidence))


@functools.lru_cache(maxsize=16)
def _min_scores_per_world(confidence: float) -> int:
    import jax

    from jaxaudit.renyi import threshold_renyi_lower_bound

    def positive(n: int) -> bool:
        ramp = np.arange(n) / n
        return float(np.atleast_1d(threshold_renyi_lower_bound(
            jax.random.key(0), 10.0 + ramp, ramp, np.array([2.0]), confidence=confidence))[0]) > 0

    # the bound grows with n at perfect separation: double until positive, then bisect
    lo, hi = MIN_SCORES, MIN_SCORES
    while not positive(hi):
        if hi >= 10_000:
            return 10_000
        lo, hi = hi + 1, min(2 * hi, 10_000)
    while lo < hi:
        mid = (lo + hi) // 2
        if positive(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file's bytes (identifies score files in a run configuration)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def accountant_epsilon(*, noise_multiplier: float, sampling_rate: float, steps: int,
                       delta: float, accountant: str = "rdp") -> float:
    """ε at δ of T steps of the (Poisson-subsampled) Gaussian mechanism: an upper bound.

    ``accountant="rdp"``: :func:`jaxaudit.accounting.epsilon_for_delta` (RDP conversion, loose);
    ``"pld"``: dp_accounting's privacy-loss-distribution accountant (value discretisation 10⁻³,
    nearly tight; the one ``--accountant pld`` calibrates σ with). +inf when the accountant has no
    finite ε (strict JSON writes it as null).
    """
    from jaxaudit.accounting import epsilon_for_delta
    from jaxaudit.accounting.rdp import pld_epsilon

    check_choice("accountant", accountant, ("rdp", "pld"))
    check_probability("delta", delta, open_low=True, open_high=True)
    account = epsilon_for_delta if accountant == "rdp" else pld_epsilon
    return float(account(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                         steps=steps, delta=delta))
