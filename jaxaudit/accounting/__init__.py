"""What DP guarantees: the guarantee types (pure ε, (ε, δ), μ-GDP, an RDP curve, a PLD privacy
profile, each with its neighbouring relation), the Rényi-DP accounting of the Poisson-subsampled
Gaussian mechanism (Mironov, arXiv 1702.07476; Mironov, Talwar, Zhang, arXiv 1908.10530: our
exact jnp RDP at every order, dp_accounting's (ε, δ) conversion rule and its PLD accountant for
the tight calibration), and the replace-one accounting of the attacked mechanisms."""

from jaxaudit.accounting.guarantees import (
    RELATIONS,
    ApproxDP,
    GaussianDP,
    Guarantee,
    PldProfile,
    PureDP,
    RdpCurve,
)
from jaxaudit.accounting.rdp import (
    DEFAULT_ORDERS,
    epsilon_for_delta,
    noise_for_epsilon,
    rdp_epsilons,
)
from jaxaudit.accounting.replace_one import dpsgd_privacy, gaussian_marginals_privacy
from jaxaudit.accounting.sampled_gaussian import sampled_gaussian_rdp

# ``Relation`` (the type of the relation field) lives in ``jaxaudit.accounting.guarantees``.
__all__ = ["DEFAULT_ORDERS", "RELATIONS", "ApproxDP", "GaussianDP", "Guarantee", "PldProfile",
           "PureDP", "RdpCurve", "dpsgd_privacy", "epsilon_for_delta",
           "gaussian_marginals_privacy", "noise_for_epsilon", "rdp_epsilons",
           "sampled_gaussian_rdp"]
