"""The name (PII) prior: faker's en_US SSA/Census tables, pinned and normalised, against the raw
tables; and the Fig. 2 table of docs/attacks.md against the closed-form gain."""

import math
import re
import sys
from collections import OrderedDict
from pathlib import Path

import mpmath
import numpy as np
import pytest

from jaxaudit.attacks.corpus import encode, secret_prefix
from jaxaudit.attacks.secret_priors import (
    FAKER_VERSION,
    NAME_KINDS,
    digit_prior,
    load_name_weights,
    name_prior,
    password_prior,
)

faker = pytest.importorskip("faker")
from faker.providers.person.en_US import Provider  # noqa: E402


def _raw_first_law() -> dict[str, float]:
    """½ F + ½ M straight from faker's provider (the independent reference)."""
    law: dict[str, float] = {}
    for table in (Provider.first_names_female, Provider.first_names_male):
        total = math.fsum(table.values())
        for k, w in table.items():
            law[k.lower()] = law.get(k.lower(), 0.0) + 0.5 * w / total
    return law


def test_name_tables_pinned():
    assert faker.VERSION == FAKER_VERSION == "40.63.0"
    tables = load_name_weights()
    assert [len(tables[k]) for k in ("female", "male", "last")] == [381, 322, 1000]
    for table in tables.values():
        assert abs(math.fsum(table.values()) - 1.0) < 1e-7
        assert all(w > 0 for w in table.values())


def test_first_name_prior_is_the_ssa_mixture():
    p = name_prior()
    law = _raw_first_law()
    assert p.name == "names" and len(p.candidates) == len(law) == 381 + 322 - 13
    assert math.isclose(p.probs.sum(), 1.0, rel_tol=1e-12)
    np.testing.assert_allclose(p.probs, [law[c] for c in p.candidates], rtol=1e-12)
    assert (np.diff(p.probs) <= 0).all()
    # The most frequent names of the 1960s-1990s SSA counts: Michael was the most common boy's
    # name of each of these decades, Jennifer the girls' top name of the 1970s.
    assert p.candidates[:5] == ("michael", "david", "james", "jennifer", "john")
    assert p.candidates[0] == max(law, key=law.__getitem__)
    # A name on both sexes' lists sums both halves.
    both = Provider.first_names_female["Jordan"] + Provider.first_names_male["Jordan"]
    assert math.isclose(law["jordan"], 0.5 * both, rel_tol=1e-7)


def test_name_prior_truncation_renormalises():
    full, top = name_prior(), name_prior(10)
    assert top.candidates == full.candidates[:10]
    np.testing.assert_allclose(top.probs, full.probs[:10] / full.probs[:10].sum(), rtol=1e-12)


def test_full_name_prior_is_independent_product():
    m = 100
    p = name_prior(m, kind="full")
    first = _raw_first_law()
    total = math.fsum(Provider.last_names.values())
    last = {k.lower(): w / total for k, w in Provider.last_names.items()}
    # The m most likely products have both parts among the m most likely of their table (m
    # names f' with D(f') ≥ D(f) give m products at least as likely as f s), ties included.
    top_f = sorted(first, key=lambda k: (-first[k], k))[:m]
    top_s = sorted(last, key=lambda k: (-last[k], k))[:m]
    joint = {f"{f} {s}": first[f] * last[s] for f in top_f for s in top_s}
    best = sorted(joint, key=lambda k: (-joint[k], k))[:m]
    assert p.candidates == tuple(best)
    want = np.array([joint[k] for k in best])
    np.testing.assert_allclose(p.probs, want / want.sum(), rtol=1e-10)
    assert p.candidates[0] == "michael smith"
    assert math.isclose(name_prior(kind="full").probs[0], first["michael"] * last["smith"],
                        rel_tol=1e-10)


@pytest.mark.parametrize("kind", NAME_KINDS)
def test_names_are_spelled_by_the_character_model(kind):
    p = name_prior(None if kind == "first" else 5000, kind=kind)
    allowed = set("abcdefghijklmnopqrstuvwxyz") | ({" "} if kind == "full" else set())
    assert all(set(c) <= allowed and c == c.strip() for c in p.candidates)
    longest = max(p.candidates, key=len)
    encode(secret_prefix(10**6 + 99) + longest, 64)  # fits the default record


@pytest.mark.parametrize("kwargs, match", [
    ({"size": 0}, "size"), ({"size": -3}, "size"), ({"size": 2.5}, "size"),
    ({"size": "10"}, "size"), ({"size": True}, "size"), ({"size": 691}, "size"),
    ({"size": 690 * 1000 + 1, "kind": "full"}, "size"), ({"size": float("nan")}, "size"),
    ({"kind": "middle"}, "kind"), ({"kind": None}, "kind"), ({"kind": ["first"]}, "kind"),
])
def test_name_prior_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        name_prior(**kwargs)


def test_name_prior_refuses_missing_or_other_faker(monkeypatch):
    monkeypatch.setattr(faker, "VERSION", "39.0.0")
    with pytest.raises(ValueError, match="faker==40.63.0"):
        name_prior(5)
    monkeypatch.undo()
    changed = OrderedDict(Provider.first_names_female)
    changed["Jennifer"] *= 1.01
    monkeypatch.setattr(Provider, "first_names_female", changed)
    with pytest.raises(ValueError, match="SHA-256"):
        name_prior(5)
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "faker", None)
    with pytest.raises(ImportError, match="pip install"):
        name_prior(5)


# ---- Fig. 2 side by side: the table in docs/attacks.md against the closed form -------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "attacks.md"


def _mp_gain(p: float, eps: float) -> float:
    """β(ε, p) − p = sigmoid(ε + logit p) − p in 50-digit arithmetic."""
    with mpmath.workdps(50):
        p_ = mpmath.mpf(p)
        beta = 1 / (1 + mpmath.exp(-(eps + mpmath.log(p_ / (1 - p_)))))
        return float(beta - p_)


def _fig2_rows() -> list[list[str]]:
    return _table_rows("<!-- fig2-gain-table -->")


def _num(cell: str) -> float:
    cell = cell.replace("−", "-").replace("×10^", "e").replace("·10^", "e")
    return float(re.sub(r"[^0-9eE.+-]", "", cell))


def _weighted_median(probs: np.ndarray) -> float:
    """The median of D(X) for X ~ D (the "median-likely" secret's mass), by its definition:
    the largest value m with Pr[D(X) ≥ m] ≥ ½, checked to have Pr[D(X) ≤ m] ≥ ½ too."""
    values, inverse = np.unique(probs, return_inverse=True)   # ascending distinct masses
    mass = np.bincount(inverse, weights=probs)                  # Pr[D(X) = v] per value v
    at_least = np.cumsum(mass[::-1])[::-1]                      # Pr[D(X) ≥ v]
    i = int(np.flatnonzero(at_least >= 0.5).max())
    assert mass[: i + 1].sum() >= 0.5 - 1e-12
    return float(values[i])


def test_fig2_doc_table_matches_closed_form_and_priors():
    rows = _fig2_rows()
    priors = {"4-digit codes": digit_prior(4), "passwords": password_prior(2000),
              "first names": name_prior(), "full names": name_prior(kind="full")}
    seen = set()
    for row in rows:
        prior_name, secret, p_cell, *gains = row
        if prior_name not in priors:
            continue
        probs = priors[prior_name].probs
        expected_p = {"most likely": probs.max(), "median": _weighted_median(probs),
                      "uniform": 1.0 / probs.size}[secret]
        p = _num(p_cell)
        assert math.isclose(p, expected_p, rel_tol=5e-3), row
        for eps, g_cell, b_cell in zip((1.0, 10.0), gains[:2], gains[2:4], strict=True):
            want = _mp_gain(expected_p, eps)
            assert math.isclose(_num(g_cell), want, rel_tol=5e-3), (row, eps, want)
            assert math.isclose(_num(b_cell), want + expected_p, rel_tol=5e-3), (row, eps)
        seen.add((prior_name, secret))
    assert len(seen) == 12


def _table_rows(marker: str) -> list[list[str]]:
    text = DOC.read_text()
    lines = text[text.index(marker):].splitlines()[1:]
    rows: list[list[str]] = []
    for line in lines:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[2:]


def test_fig2_solved_priors_match_closed_form():
    """Each p in the doc's solve table meets its condition with equality (to the printed 3
    significant figures): the gain's quadratic roots and β's inverse, in 50-digit arithmetic."""
    def roots(eps: float, kind: str, target: float) -> list[float]:
        with mpmath.workdps(50):
            e, c = mpmath.mpf(eps), mpmath.mpf(target)
            if kind == "success":
                return [float(1 / (1 + mpmath.exp(-(mpmath.log(c / (1 - c)) - e))))]
            b = 1 - c
            disc = mpmath.sqrt(b * b - 4 * c / mpmath.expm1(e))
            return [float((b - disc) / 2), float((b + disc) / 2)]

    rows = _table_rows("<!-- fig2-solve-table -->")
    assert len(rows) == 6
    for _, kind, eps_cell, condition, p_cell in rows:
        target = _num(condition.split()[-1])
        cells = [_num(x) for x in re.findall(r"[0-9][0-9.e-]*", p_cell.split("(")[0])]
        want = roots(float(eps_cell), kind, target)
        if kind == "gain" and "≤" in condition:
            want = want[:1]  # gain ≤ c below the maximiser: p up to the lower root
        assert len(cells) == len(want), (p_cell, want)
        for got, w in zip(cells, want, strict=True):
            assert math.isclose(got, w, rel_tol=2e-3), (condition, got, w)
