"""Library pipelines: each audit that a ``jaxaudit`` command runs, as one function that a user
calls from Python with a configuration ``NamedTuple``, an optional run folder and an optional
progress callback, returning the result types (docs/architecture.md, "Pipelines")."""

from jaxaudit.pipelines.attacks import (
    AttackSweep,
    MarginalsConfig,
    SecretsConfig,
    run_marginals,
    run_secrets,
)
from jaxaudit.pipelines.bmp import BmpConfig, BmpResult, run_bmp
from jaxaudit.pipelines.bounds import BoundsConfig, BoundsResult, run_bounds
from jaxaudit.pipelines.common import ShadowRun, load_shadow
from jaxaudit.pipelines.one_run import OneRunAuditConfig, run_one_run
from jaxaudit.pipelines.rdp import (
    RdpConfig,
    RdpResult,
    ScoresAuditConfig,
    run_rdp,
    run_scores_audit,
)
from jaxaudit.pipelines.shadow import ShadowConfig, run_shadow

__all__: list[str] = []
__all__ += ["BoundsConfig", "BoundsResult", "run_bounds"]
__all__ += ["ShadowConfig", "ShadowRun", "load_shadow", "run_shadow", "BmpConfig", "BmpResult", "run_bmp"]
__all__ += ["AttackSweep", "MarginalsConfig", "SecretsConfig", "run_marginals", "run_secrets"]
__all__ += ["RdpConfig", "RdpResult", "ScoresAuditConfig", "run_rdp", "run_scores_audit"]
__all__ += ["OneRunAuditConfig", "run_one_run"]
