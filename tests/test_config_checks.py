"""Every configuration NamedTuple has one check: ``config.check()``, which the functions and
pipelines taking it call first. A flag refuses ``"yes"`` and ``"False"`` (truthy strings that
switched options on), a count refuses 16.0, a number refuses a string, each with an error naming
the field; a nested configuration (``AuditConfig.nuts``) is checked by its own ``check()``."""

import numpy as np
import pytest

from jaxaudit.attacks import LmConfig, ReconstructionConfig
from jaxaudit.bmp import AuditConfig, NutsConfig, PosteriorModel
from jaxaudit.dpsgd import DpsgdConfig, OneRunConfig
from jaxaudit.graph import NodeDp, ShadowTraining
from jaxaudit.pipelines import (
    BmpConfig,
    BoundsConfig,
    MarginalsConfig,
    NodeDpConfig,
    OneRunAuditConfig,
    RdpConfig,
    ScoresAuditConfig,
    SecretsConfig,
    ShadowConfig,
)
from jaxaudit.renyi import CriticConfig

CONFIGS = [
    ShadowTraining(), NodeDp(), NutsConfig(), PosteriorModel(), AuditConfig(), LmConfig(),
    ReconstructionConfig(),
    DpsgdConfig(clip_norm=1.0, noise_multiplier=1.0, learning_rate=0.1),
    OneRunConfig(num_canaries=100), CriticConfig(),
    SecretsConfig(), MarginalsConfig(), BoundsConfig(epsilon=1.0, prior="uniform:10", targets=10),
    ShadowConfig(), NodeDpConfig(noise_multiplier=1.0), BmpConfig(), RdpConfig(),
    ScoresAuditConfig(in_scores=np.zeros(10), out_scores=np.ones(10), epsilon=1.0),
    OneRunAuditConfig(),
]


def _kinds(cls, field):
    hint = cls.__annotations__[field]
    text = hint if isinstance(hint, str) else hint.__forward_arg__
    return {part.strip() for part in text.split("|")}


def _bad_values(cls, field):
    """Values the field's annotation rules out: a string for a flag or a number, a float for an
    integer (fields that take strings or paths have their own checks)."""
    kinds = _kinds(cls, field)
    if not kinds <= {"int", "float", "bool", "str", "None", "Path"} or kinds & {"str", "Path"}:
        return []
    if "bool" in kinds:
        return ["yes", "False", 1]
    if "int" in kinds and "float" not in kinds:
        return [16.0, True, "16"]
    return ["0.5", True]


CASES = [(config, field, bad) for config in CONFIGS for field in config._fields
         for bad in _bad_values(type(config), field)]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_the_defaults_pass_their_check(config):
    assert isinstance(config.check(), type(config))


@pytest.mark.parametrize(("config", "field", "bad"), CASES,
                         ids=[f"{type(c).__name__}.{f}={b!r}" for c, f, b in CASES])
def test_a_value_of_the_wrong_kind_is_refused_naming_the_field(config, field, bad):
    with pytest.raises(ValueError, match=rf"\b{field}\b"):
        config._replace(**{field: bad}).check()


def test_every_configuration_type_is_covered():
    """Every exported configuration NamedTuple (a ``check()`` method) is in CONFIGS (the bounds'
    PrivacyModel and the accounting guarantees are checked by their own ``validate()``)."""
    import importlib

    from jaxaudit.runs import Sweep

    exported = set()
    for package in ("accounting", "attacks", "bmp", "bounds", "dpsgd", "graph", "mia",
                    "pipelines", "renyi", "runs", "stats"):
        module = importlib.import_module(f"jaxaudit.{package}")
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and hasattr(obj, "_fields") and callable(
                    getattr(obj, "check", None)):
                exported.add(obj)
    # runs.Sweep is checked by its own tests (tests/runs/test_progress.py): it holds where units
    # run, not a number
    assert exported - {Sweep} == {type(c) for c in CONFIGS}
    assert all(callable(getattr(type(c), "check", None)) for c in CONFIGS)


def test_the_issue_examples():
    with pytest.raises(TypeError, match=r"fix_variance must be True or False, got 'yes'"):
        AuditConfig(fix_variance="yes").check()
    with pytest.raises(TypeError, match=r"fix_variance must be True or False, got 'False'"):
        AuditConfig(fix_variance="False").check()
    with pytest.raises(TypeError, match=r"num_canaries must be an integer, got 16.0"):
        OneRunConfig(num_canaries=16.0).check()
    with pytest.raises(TypeError, match=r"num_warmup must be an integer, got 10.0"):
        AuditConfig(nuts=NutsConfig(num_warmup=10.0)).check()     # nested: checked too
    with pytest.raises(TypeError, match=r"model.symmetric must be True or False, got 'yes'"):
        AuditConfig(model=PosteriorModel(symmetric="yes")).check()


def test_a_pipeline_configuration_checks_its_nested_library_configurations():
    """BmpConfig holds a ShadowConfig (with its NodeDpConfig) and an AuditConfig (with its
    NutsConfig); SecretsConfig an LmConfig; RdpConfig a DpsgdConfig: each is checked through the
    pipeline configuration's check()."""
    with pytest.raises(TypeError, match=r"num_warmup must be an integer, got 10.0"):
        BmpConfig(audit=AuditConfig(nuts=NutsConfig(num_warmup=10.0))).check()
    with pytest.raises(TypeError, match=r"epochs must be an integer, got 2.0"):
        BmpConfig(shadow=ShadowConfig(epochs=2.0)).check()
    with pytest.raises(TypeError, match=r"dp\.degree_cap must be an integer, got 2.0"):
        ShadowConfig(model="mlp", dp=NodeDpConfig(epsilon=1.0, degree_cap=2.0)).check()
    with pytest.raises(TypeError, match=r"hidden_dim must be an integer, got 8.0"):
        SecretsConfig(lm=LmConfig(hidden_dim=8.0)).check()
    with pytest.raises(ValueError, match=r"dpsgd\.method"):
        RdpConfig(dpsgd=RdpConfig().dpsgd._replace(method="fast")).check()


def test_the_audit_calls_check_first():
    """bmp.audit_from_scores refuses a bad AuditConfig before it looks at the scores."""
    import jax

    from jaxaudit.bmp import audit_from_scores

    with pytest.raises(TypeError, match=r"mp_baseline must be True or False"):
        audit_from_scores(jax.random.key(0), np.zeros((4, 3)), np.zeros((4, 3), bool), np.full(3, 0.5),
                          config=AuditConfig(mp_baseline="no"))
