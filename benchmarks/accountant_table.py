"""Table: RDP of the Poisson-subsampled Gaussian, ours vs dp_accounting vs mpmath quadrature.

For one step (T = 1; T steps multiply every column by T) at σ = ``--sigma`` (default 2), the
per-step ε_α = log A_α / (α − 1), A_α = E_{z∼N(0,σ²)}[(1 − q + q·exp((2z − 1)/(2σ²)))^α]
(Mironov, Talwar, Zhang, arXiv 1908.10530) from

* ours: :func:`jaxaudit.accounting.rdp_epsilons` (exact jnp series, float64);
* dp_accounting: ``RdpAccountant(orders).compose(PoissonSampledDpEvent(q, GaussianDpEvent(σ)))``
  (its absl "Excluding this order" warnings silenced);
* quadrature: mpmath (40 digits) of the defining integral, the independent reference.

    python benchmarks/accountant_table.py            # σ = 2, the table in docs/renyi.md
    python benchmarks/accountant_table.py --sigma 2.62
"""

from __future__ import annotations

import argparse
import logging

import dp_accounting
import mpmath as mp
import numpy as np

from jaxaudit.accounting import rdp_epsilons

QS = (0.01, 0.1, 0.5)
ORDERS = (1.1, 1.25, 1.5, 2.0, 3.0)


def quadrature(q: float, sigma: float, alpha: float) -> float:
    """D_α((1 − q)N(0, σ²) + qN(1, σ²) ‖ N(0, σ²)) by mpmath quadrature at 40 digits."""
    with mp.workdps(40):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
        z0 = s**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2
        points = sorted({-mp.inf, -10 * s, mp.mpf(0), z0, a, a + 10 * s, mp.inf})
        value = mp.quad(lambda z: mp.npdf(z, 0, s)
                        * (1 - q + q * mp.exp((2 * z - 1) / (2 * s**2))) ** a, points)
        return float(mp.log(value) / (a - 1))


def dp_accounting_rdp(q: float, sigma: float, orders) -> np.ndarray:
    accountant = dp_accounting.rdp.RdpAccountant(list(orders))
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    logging.disable(logging.WARNING)
    try:
        accountant.compose(event)
    finally:
        logging.disable(logging.NOTSET)
    return np.asarray(accountant.rdp, dtype=np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sigma", type=float, default=2.0)
    args = parser.parse_args()
    print(f"σ = {args.sigma:g}, T = 1 (per-step ε_α)\n")
    print("| q | α | ours | dp_accounting | mpmath quadrature | ours / quad − 1 "
          "| dp_accounting / quad − 1 |")
    print("|---|---|---|---|---|---|---|")
    for q in QS:
        ours = rdp_epsilons(noise_multiplier=args.sigma, sampling_rate=q, steps=1, orders=ORDERS)
        theirs = dp_accounting_rdp(q, args.sigma, ORDERS)
        for a, o, t in zip(ORDERS, ours, theirs):
            ref = quadrature(q, args.sigma, a)
            their_error = f"{t / ref - 1:+.1%}" if np.isfinite(t) else "∞"
            print(f"| {q:g} | {a:g} | {o:.6e} | {t:.6e} | {ref:.6e} | {o / ref - 1:+.1e} "
                  f"| {their_error} |")


if __name__ == "__main__":
    main()
