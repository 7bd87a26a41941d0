"""The steps of ``jaxaudit rdp`` around the numeric audit: canary-score files, the audit of a
set of scores into a run folder, the audit table and its plot. The data split is :func:`jaxaudit.datasets.audit_data` (re-exported here); the models
by name are :func:`jaxaudit.dpsgd.models.model_by_name`."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxaudit._validation import check_choice
from jaxaudit.datasets.audit_split import AUDIT_DATASETS as DATASETS
from jaxaudit.datasets.audit_split import audit_data

__all__ = [
    "DATASETS", "MIN_SCORES", "audit_data", "load_scores", "file_sha256", "min_scores_per_world",
    "accountant_epsilon", "strict_json", "audit_rows", "audit_to_rundir", "records_table",
    "epsilon_table", "summary_markdown", "plot_audit",
]

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
    """The array of a ``.npy`` file, after checking what the file really is and that its header
    fits its size (a 200-byte file whose header claims 10¹² floats is refused before any memory
    is allocated); pickles are never loaded."""
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
        not match its size, or the array is not 1-D real numbers, holds NaN or infinite values,
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


def min_scores_per_world(significance: float = 0.05) -> int:
    """Fewest scores per world with which the threshold-test bound can be positive at all.

    The smallest n for which n perfectly separated scores per world (every IN score above every
    OUT score) give :func:`jaxaudit.renyi.threshold_renyi_lower_bound` > 0 at α = 2 and this
    significance: with fewer, the held-out Clopper–Pearson intervals are so wide that no data
    can show anything (14 at 0.05, 16 at 0.01), and the DV bound is no better. Computed with the
    bound itself, so it follows any change of the test.

    Args:
      significance: level of the lower bounds, in (0, 1).

    Returns:
      n (an int ≥ :data:`MIN_SCORES`; 10 000 if none up to it works).
    """
    return _min_scores_per_world(float(significance))


@functools.lru_cache(maxsize=16)
def _min_scores_per_world(significance: float) -> int:
    from jaxaudit.renyi import threshold_renyi_lower_bound

    def positive(n):
        ramp = np.arange(n) / n
        return float(np.atleast_1d(threshold_renyi_lower_bound(
            10.0 + ramp, ramp, [2.0], significance))[0]) > 0

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

    check_choice("accountant", accountant, ("rdp", "pld"))
    if accountant == "rdp":
        return float(epsilon_for_delta(noise_multiplier=noise_multiplier,
                                       sampling_rate=sampling_rate, steps=steps, delta=delta))
    import dp_accounting

    gaussian = dp_accounting.GaussianDpEvent(float(noise_multiplier))
    step = (gaussian if sampling_rate == 1.0
            else dp_accounting.PoissonSampledDpEvent(float(sampling_rate), gaussian))
    pld = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    pld.compose(dp_accounting.SelfComposedDpEvent(step, int(steps)))
    return float(pld.get_epsilon(float(delta)))


def _finite_or_none(obj):
    if isinstance(obj, dict):
        return {str(k): _finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite_or_none(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _finite_or_none(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def strict_json(obj: Any) -> str:
    """``obj`` as strict JSON (RFC 8259): every NaN or ±inf becomes ``null``.

    Python's ``json`` writes bare ``NaN``/``Infinity`` by default, which most JSON readers
    (JavaScript's ``JSON.parse``, ``jq``, Go, Rust's serde) refuse. In the rdp outputs ``null``
    means "no finite value": an accountant ε of +∞ (no finite guarantee) or an undefined standard
    error. The text is written with ``allow_nan=False``, so nothing non-finite can slip through.
    """
    return json.dumps(_finite_or_none(obj), indent=2, allow_nan=False)


def audit_rows(records: Sequence[Any]) -> list[dict]:
    """One table row per order: the records plus the reconciled DV estimate.

    ``dv_estimate`` is the DV point estimate raised to the best valid lower bound of the order
    (max of the DV and threshold-test lower bounds and 0; the GDP baseline is left out, it
    assumes a Gaussian privacy profile), and ``raised_to_bound`` says whether it was raised
    (:func:`jaxaudit.renyi.reconcile_estimate`). ``dv_se`` is the held-out standard error of
    ``dv_point`` given the trained critic: the sampling spread of the estimator, not its bias
    (the DV estimate is biased downwards), so it says nothing about ``dv_estimate`` once raised.
    """
    from jaxaudit.renyi import reconcile_estimate

    if not records:
        return []
    point = np.array([r.dv_point for r in records], np.float64)
    bounds = np.array([[r.dv_lower for r in records], [r.threshold_lower for r in records],
                       [0.0] * len(records)], np.float64)
    # an undefined estimate or bound (NaN) is "none": the bound, or the estimate, stands alone
    point, bounds = np.nan_to_num(point, nan=-np.inf), np.nan_to_num(bounds, nan=-np.inf)
    with jax.enable_x64(True):  # the table's numbers in float64, as audit_dpsgd gives them
        rec = jax.device_get(reconcile_estimate(point, bounds))
    rows = []
    for r, est, raised in zip(records, np.asarray(rec.estimate), np.asarray(rec.raised)):
        rows.append({"order": r.order, "accountant": r.accountant, "dv_point": r.dv_point,
                     "dv_se": r.dv_se, "dv_estimate": float(est), "raised_to_bound": bool(raised),
                     "dv_lower": r.dv_lower, "threshold_lower": r.threshold_lower,
                     "gdp_lower": r.gdp_lower, "violation": r.violation})
    return rows


def audit_to_rundir(
    rundir: Any, key: jax.Array, in_scores: ArrayLike, out_scores: ArrayLike, *, orders: ArrayLike,
    accountant_params: dict, significance: float = 0.05, delta: ArrayLike = 1e-5,
    info: dict | None = None, title: str = "", accountant: str = "rdp",
) -> tuple[list, dict]:
    """Audit canary scores and write the results into a run folder.

    The step after the scores exist, the same whether the scores come from
    :func:`jaxaudit.dpsgd.canary_runs` or from files (:func:`load_scores`): the records of
    :func:`jaxaudit.dpsgd.audit_dpsgd` (DV lower bounds next to the accountant and the threshold
    and GDP baselines; Kim, Alabi & Varshney, arXiv 2605.21938; Nasr et al., USENIX Security
    2023), the ε-at-δ comparison (the accountant's upper bound, the GDP baseline and the
    Clopper–Pearson threshold test of Jagielski et al., arXiv 2006.07709) and the ε_α-vs-α plot
    (:func:`plot_audit`). Files written (all JSON strict, :func:`strict_json`):

    * ``results.json``: the summary below;
    * ``rdp_table.json``: the per-order rows of :func:`audit_rows` (a list of records, the form
      ``jaxaudit report`` renders as a table);
    * ``epsilon_at_delta.json``: the rows of :func:`epsilon_table`;
    * ``summary.md``: both tables in markdown with their reading (the report's findings);
    * ``rdp_audit.png``.

    Args:
      rundir: the :class:`jaxaudit.runs.RunDir` to write into.
      key: PRNG key of the DV estimator.
      in_scores: (R,) scores of the runs with the canary.
      out_scores: (R',) scores of the runs without it.
      orders: orders α > 1.
      accountant_params: ``dict(noise_multiplier=σ, sampling_rate=q, steps=T)``.
      significance: failure probability of every lower bound.
      delta: δ of the (ε, δ) statements.
      info: extra JSON-able entries for the summary (e.g. the canary label, the score files).
      title: title of the plot.
      accountant: accountant of the ε-at-δ upper bound, "rdp" or "pld"
        (:func:`accountant_epsilon`).

    Returns:
      ``(records, summary)``: the list of :class:`jaxaudit.dpsgd.OrderAudit` and the dict
      written to ``results.json`` (``info``'s entries, the accountant parameters, ``delta``,
      ``significance``, the score counts ``num_in_scores``/``num_out_scores``, ``records`` (one
      dict per order, every field of the record), ``rows`` (:func:`audit_rows`),
      ``epsilon_at_delta`` (:func:`epsilon_table`) and ``violation``).
    """
    from jaxaudit.dpsgd.audit import audit_dpsgd
    from jaxaudit.renyi import clopper_pearson_epsilon_lower_bound

    records = audit_dpsgd(key, in_scores, out_scores, orders, accountant_params=accountant_params,
                          significance=significance, delta=delta)
    upper = accountant_epsilon(**accountant_params, delta=delta, accountant=accountant)
    cp = clopper_pearson_epsilon_lower_bound(in_scores, out_scores, delta, significance)
    eps_rows = epsilon_table(records, accountant_epsilon=upper, accountant=accountant,
                             clopper_pearson=cp, delta=delta)
    rows = audit_rows(records)
    summary = {
        **(info or {}),
        **accountant_params,
        "accountant": accountant,
        "delta": delta,
        "significance": significance,
        "num_in_scores": int(np.size(in_scores)),
        "num_out_scores": int(np.size(out_scores)),
        "records": [r._asdict() for r in records],
        "rows": rows,
        "epsilon_at_delta": eps_rows,
        "violation": any(r.violation for r in records),
    }
    rundir.write_text("results.json", strict_json(summary))
    rundir.write_text("rdp_table.json", strict_json(rows))
    rundir.write_text("epsilon_at_delta.json", strict_json(eps_rows))
    rundir.write_text("summary.md", summary_markdown(rows, eps_rows, significance=significance,
                                                    title=title))
    plot_audit(records, Path(rundir.path) / "rdp_audit.png", accountant_params=accountant_params,
               title=title)
    return records, summary


def epsilon_table(records: Sequence[Any], *, accountant_epsilon: float, accountant: str,
                  clopper_pearson: float, delta: float) -> list[dict]:
    """ε at δ, one row per statement: the accountant's upper bound and the (ε, δ) lower bounds.

    Rows: ``accountant (<name>)`` (upper bound), ``GDP baseline`` (Nasr et al.'s ε at δ from
    μ_lo, a lower bound under their Gaussian-profile assumption), ``Clopper-Pearson threshold
    test`` (Jagielski et al., arXiv 2006.07709; rigorous). The DV and threshold RDP bounds have
    no (ε, δ) form (converting an RDP *lower* bound to (ε, δ) is not valid), so they are not here.
    """
    gdp = records[0].gdp_epsilon if records else float("nan")
    return [
        {"statement": f"accountant ({accountant})", "kind": "upper bound", "delta": delta,
         "epsilon": accountant_epsilon},
        {"statement": "GDP baseline", "kind": "lower bound (Gaussian profile assumed)",
         "delta": delta, "epsilon": gdp},
        {"statement": "Clopper-Pearson threshold test", "kind": "lower bound", "delta": delta,
         "epsilon": clopper_pearson},
    ]


#: The marker of a DV estimate raised to the best valid lower bound, in every table.
RAISED = "↑bound"


def _outward(value: float, digits: int, direction: str) -> float:
    """``value`` rounded to ``digits`` decimals downwards (a lower bound: what is printed still
    holds), upwards (an upper bound) or to nearest (an estimate); exact decimal arithmetic."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    if direction == "nearest" or not math.isfinite(value):
        return value
    rounding = ROUND_FLOOR if direction == "down" else ROUND_CEILING
    return float(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=rounding))


def _num(value: float, width: int, digits: int = 4, direction: str = "nearest") -> str:
    """A number of the table: lower bounds printed rounded down, upper bounds up (so the printed
    value is still a bound), estimates to nearest."""
    if not math.isfinite(value):
        return f"{'inf' if value > 0 else 'n/a':>{width}}"
    return f"{_outward(value, digits, direction):{width}.{digits}f}"


def records_table(records_or_rows: Sequence[Any]) -> str:
    """The audit as a fixed-width text table, one row per order.

    Columns: α; the accountant's ε_α (upper bound); the DV estimate (the point estimate raised to
    the best valid lower bound, marked ``↑bound`` when raised, :func:`audit_rows`); the DV point
    estimate and its sampling SE (spread of the held-out estimate given the critic; not its bias);
    the DV, GDP and threshold lower bounds; the violation flag.
    """
    rows = [r if isinstance(r, dict) else None for r in records_or_rows]
    if any(r is None for r in rows):
        rows = audit_rows(records_or_rows)
    head = (f"{'alpha':>6} {'accountant':>11} {'DV estimate':>16} {'DV point':>9} "
            f"{'± SE(samp.)':>11} {'DV lower':>9} {'GDP lower':>10} {'thr lower':>10} violation")
    lines = [head]
    for r in rows:
        mark = f" {RAISED}" if r["raised_to_bound"] else " " * (len(RAISED) + 1)
        lines.append(f"{r['order']:6.3g} {_num(r['accountant'], 11, direction='up')} "
                     f"{_num(r['dv_estimate'], 16 - len(mark))}{mark} {_num(r['dv_point'], 9)} "
                     f"{_num(r['dv_se'], 11)} {_num(r['dv_lower'], 9, direction='down')} "
                     f"{_num(r['gdp_lower'], 10, direction='down')} "
                     f"{_num(r['threshold_lower'], 10, direction='down')} "
                     f"{'YES' if r['violation'] else 'no'}")
    return "\n".join(lines)


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def _md_num(value, direction: str = "nearest") -> str:
    """A number of the markdown tables (4 decimals; bounds rounded outward, see :func:`_num`)."""
    if value is None or (not math.isfinite(value) and value != math.inf):
        return "n/a"
    return "∞" if value == math.inf else f"{_outward(value, 4, direction):.4f}"


def summary_markdown(rows: Sequence[dict], eps_rows: Sequence[dict], *, significance: float,
                     title: str = "") -> str:
    """Both rdp tables in markdown, with what each column means (``summary.md``)."""
    level = f"{1 - significance:.0%}"
    table = _markdown(
        ["α", "accountant ε_α (upper)", "DV estimate", "DV point", "± SE (sampling)",
         f"DV lower ({level})", f"GDP lower ({level})", f"threshold lower ({level})", "violation"],
        [[f"{r['order']:g}", _md_num(r["accountant"], "up"),
          _md_num(r["dv_estimate"]) + (" (raised to bound)" if r["raised_to_bound"] else ""),
          _md_num(r["dv_point"]), _md_num(r["dv_se"]), _md_num(r["dv_lower"], "down"),
          _md_num(r["gdp_lower"], "down"), _md_num(r["threshold_lower"], "down"),
          "YES" if r["violation"] else "no"] for r in rows])
    eps = _markdown(["statement", "kind", "δ", "ε"],
                    [[e["statement"], e["kind"], f"{e['delta']:g}",
                      _md_num(e["epsilon"], "up" if e["kind"] == "upper bound" else "down")]
                     for e in eps_rows])
    raised = [f"{r['order']:g}" for r in rows if r["raised_to_bound"]]
    notes = [
        f"# RDP audit{': ' + title if title else ''}", "",
        "## ε_α per order (RDP units)", "", table, "",
        "DV estimate: the Donsker–Varadhan point estimate raised to the best valid lower bound "
        "of its order (DV or threshold-test lower bound) when it falls below it; the DV estimate "
        "is biased downwards (a learned critic never exceeds the optimum), and an estimate below "
        "a bound that holds is too low. ± SE (sampling): the held-out standard error of the DV "
        "point estimate given the critic, i.e. its sampling spread only, not its bias.",
    ]
    if raised:
        notes += ["", f"Raised to bound at α = {', '.join(raised)}: there the DV point estimate "
                  "and its SE understate ε_α; read the estimate as at least the bound."]
    notes += ["", "## ε at δ", "", eps, ""]
    return "\n".join(notes)


def plot_audit(records: Sequence[Any], path: str | Path, *, accountant_params: dict,
               title: str = "") -> str | Path:
    """ε_α vs α: the accountant's curve, the DV point/lower bound and the two baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxaudit.accounting import rdp_epsilons

    orders = np.array([r.order for r in records])
    grid = np.linspace(max(1.01, orders.min() * 0.9), orders.max() * 1.1, 60)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(grid, rdp_epsilons(orders=grid, **accountant_params), "k-", label="accountant ε_α")
    ax.plot(orders, [r.dv_point for r in records], "o--", label="DV point estimate")
    ax.plot(orders, [max(r.dv_lower, 0.0) for r in records], "s-", label="DV lower bound")
    ax.plot(orders, [r.gdp_lower for r in records], "^-", label="GDP baseline (α μ²/2)")
    ax.plot(orders, [r.threshold_lower for r in records], "v-", label="threshold-test bound")
    ax.set_xlabel("order α")
    ax.set_ylabel("ε_α (RDP)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
