"""The privacy guarantees of the two attacked mechanisms, for the substitution of one record.

The replace-one accounting lives in :mod:`jaxaudit.accounting.replace_one` (``accounting`` owns
the privacy guarantees, docs/vocabulary.md); this module keeps the former names as the same
objects: :class:`PrivacyProfile` is :class:`jaxaudit.accounting.PldProfile` (with ``relation``
``"replace_one"`` for both mechanisms here), and :func:`dpsgd_privacy`,
:func:`gaussian_marginals_privacy` and :data:`MAX_DPSGD_EPSILON` are re-exported unchanged.
"""

from __future__ import annotations

from jaxaudit.accounting.guarantees import PldProfile
from jaxaudit.accounting.replace_one import (
    MAX_DPSGD_EPSILON,
    dpsgd_privacy,
    gaussian_marginals_privacy,
)

#: The former name of :class:`jaxaudit.accounting.PldProfile` (the same object).
PrivacyProfile = PldProfile

__all__ = [
    "MAX_DPSGD_EPSILON",
    "PrivacyProfile",
    "dpsgd_privacy",
    "gaussian_marginals_privacy",
]
