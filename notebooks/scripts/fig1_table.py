"""Fig. 1 of Swanberg et al. (arXiv 2507.08158) with numbers: our count bound beside KGK+ and MMC.

    uv run python notebooks/scripts/fig1_table.py      # prints the markdown table of docs/bounds.md

n = 1000 targets, γ = 0.05, one guess per target. For each prior and privacy model it prints the
level-γ count bound of each method (a v with Pr[L ≥ v] ≤ γ; n + 1 = vacuous) and the least of
them, as :func:`jaxaudit.bounds.summarize_bounds` reports it:

* ours: ``success_count_bound`` (ε-DP, (ε, δ)-DP) or ``success_count_bound_fdp`` (μ-GDP, the
  additive n·δ_f(ε) route minimised over an ε grid);
* KGK+: the per-target bound b = 1 − f(κ) (Kulynych et al., arXiv 2507.06969), shown as n·b,
  and made a count by Markov's inequality, ⌈Σ_i b_i/γ⌉;
* MMC: Mahloujifar–Melis–Chaudhuri's one-run threshold (arXiv 2410.22235) for a uniform prior
  over K values (it assumes uniform canaries: no number for the other priors).
"""

from __future__ import annotations

import jax
import numpy as np

from jaxaudit.bounds import PrivacyModel, summarize_bounds, zipf_prior

N, GAMMA = 1000, 0.05
MODELS = [
    ("ε-DP, ε = 1", PrivacyModel(epsilon=1.0)),
    ("ε-DP, ε = 4", PrivacyModel(epsilon=4.0)),
    ("(ε, δ)-DP, ε = 1, δ = 1e−6", PrivacyModel(epsilon=1.0, delta=1e-6)),
    ("(ε, δ)-DP, ε = 4, δ = 1e−6", PrivacyModel(epsilon=4.0, delta=1e-6)),
    ("μ-GDP, μ = 0.5", PrivacyModel(mu=0.5)),
    ("μ-GDP, μ = 1", PrivacyModel(mu=1.0)),
]


def priors() -> list[tuple[str, np.ndarray, int | None]]:
    top = float(zipf_prior(0.9, 10**7, [1])[0])
    mixed = np.r_[np.full(N // 2, 0.5), np.full(N - N // 2, 0.001)]
    return [("uniform, K = 10", np.full(N, 0.1), 10),
            (f"Zipf(0.9) over 10⁷ values, top guess (p = {top:.3g})", np.full(N, top), None),
            ("mixed: 500 targets p = 0.5, 500 p = 0.001", mixed, None)]


def main() -> None:
    jax.config.update("jax_enable_x64", True)
    rows = ["| prior | privacy | ours | KGK+ n·b | KGK+ (Markov) | MMC | tightest |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for prior_name, p, k in priors():
        for model_name, model in MODELS:
            s = summarize_bounds(p, model, gamma=GAMMA, uniform_support=k)
            kappa_sum = _kgk_sum(p, model)
            mmc = s.baselines.get("mmc_threshold", "—")
            rows.append(f"| {prior_name} | {model_name} | {s.count_bound} | {kappa_sum:.1f} | "
                        f"{s.baselines['kgk_plus_count']} | {mmc} | "
                        f"{s.tightest_bound} ({s.tightest}) |")
            print(rows[-1], flush=True)
    print("\n".join(rows))


def _kgk_sum(p: np.ndarray, model: PrivacyModel) -> float:
    """Σ_i b_i: the expected number of successes KGK+ allows (the Markov count's numerator)."""
    from jaxaudit.bounds import kgk_bound_dp, kgk_bound_gdp

    if model.mu is not None:
        b = kgk_bound_gdp(p, model.mu)
    else:
        b = kgk_bound_dp(p, model.epsilon, model.delta)
    return float(np.sum(np.asarray(b, dtype=np.float64)))


if __name__ == "__main__":
    main()
