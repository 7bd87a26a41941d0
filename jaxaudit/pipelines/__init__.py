"""Library pipelines: each audit that a ``jaxaudit`` command runs, as one function that a user
calls from Python with a configuration ``NamedTuple``, an optional run folder and an optional
progress callback, returning the result types (docs/architecture.md, "Pipelines"). A configuration
nests the library's own (``BmpConfig.shadow`` is a ``ShadowConfig``, ``BmpConfig.audit`` a
``jaxaudit.bmp.AuditConfig``); where the work units run is one ``jaxaudit.runs.Sweep``."""

from jaxaudit.pipelines.attacks import (
    AttackSweep,
    MarginalsConfig,
    SecretsConfig,
    run_marginals,
    run_secrets,
)
from jaxaudit.pipelines.bmp import BmpConfig, BmpResult, run_bmp
from jaxaudit.pipelines.bounds import BoundsConfig, BoundsResult, run_bounds
from jaxaudit.pipelines.one_run import OneRunAuditConfig, run_one_run
from jaxaudit.pipelines.rdp import (
    RdpConfig,
    RdpResult,
    ScoresAuditConfig,
    run_rdp,
    run_scores_audit,
)
from jaxaudit.pipelines.shadow import run_shadow
from jaxaudit.pipelines.shadow_models import NodeDpConfig, ShadowConfig, ShadowRun, load_shadow

__all__: list[str] = []
__all__ += ["BoundsConfig", "BoundsResult", "run_bounds"]
__all__ += ["ShadowConfig", "NodeDpConfig", "ShadowRun", "load_shadow", "run_shadow"]
__all__ += ["BmpConfig", "BmpResult", "run_bmp"]
__all__ += ["AttackSweep", "MarginalsConfig", "SecretsConfig", "run_marginals", "run_secrets"]
__all__ += ["RdpConfig", "RdpResult", "ScoresAuditConfig", "run_rdp", "run_scores_audit"]
__all__ += ["OneRunAuditConfig", "run_one_run"]
