# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Auditing an Opacus training run with `jaxaudit rdp --scores`
#
# The audit needs only one number per training run: the canary's score on the final model
# (here −loss of a blank image). Train R runs with the canary in the training set and R without,
# save the two score arrays with `numpy.save`, and give them to `jaxaudit rdp --scores` with the
# accountant parameters of the training (σ, q, T). See `docs/opacus.md`.
#
# Both worlds must use the **same sampling rate q**. Opacus's `make_private(poisson_sampling=True)`
# sets q = 1/len(data_loader), so with a fixed batch size the two worlds can end up with
# different rates (100 vs 101 examples at batch 50: q = 1/2 vs 1/3). Here each world builds a
# `DPDataLoader(dataset, sample_rate=Q)` itself and the rate Opacus reads back is checked.
#
# This runs at a small size (synthetic 28×28 images, |D| = 30, T = 6, 20 runs per world, about
# a minute on a CPU): its numbers show the pipeline, not a meaningful audit. It needs `torch`
# and `opacus`, which jaxaudit does not install; without them it says so and does nothing.
# `JAXAUDIT_OPACUS_RUNS` sets the runs per world (docs/opacus.md's run used 200).

# %%
import importlib.util
import json
import os
import tempfile
from pathlib import Path

import numpy as np

HAVE_OPACUS = all(importlib.util.find_spec(m) is not None for m in ("torch", "opacus"))
FIGURES = Path(os.environ.get("JAXAUDIT_FIGURES", "figures"))
if not HAVE_OPACUS:
    WHY = ("skipped: this notebook trains with Opacus; install torch and opacus "
           "(pip install torch opacus) to run it")
    print(WHY)
    FIGURES.mkdir(parents=True, exist_ok=True)  # the notebook runner checks that it wrote a file
    (FIGURES / "opacus_audit_skipped.txt").write_text(WHY + "\n")

# %%
FAST = os.environ.get("JAXAUDIT_NOTEBOOK_FAST") == "1"  # the test suite: the fewest runs allowed
RUNS = int(os.environ.get("JAXAUDIT_OPACUS_RUNS", "14" if FAST else "20"))  # >= 14 at 5%
SIZE, STEPS, SIGMA, CLIP, Q, LR = 30, 6, 1.0, 1.0, 0.5, 0.5  # |D|, T, σ, C, q, η

if HAVE_OPACUS:
    import torch
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader
    from torch import nn
    from torch.utils.data import TensorDataset

    rng = np.random.default_rng(0)
    prototypes = (rng.random((10, 28, 28)) < 0.2).astype(np.float32)
    labels = rng.integers(0, 10, SIZE)
    images = np.clip(prototypes[labels] + 0.3 * rng.standard_normal((SIZE, 28, 28)), 0, 1)
    x = torch.tensor(images, dtype=torch.float32)
    y = torch.tensor(labels, dtype=torch.long)
    canary_x, canary_y = torch.zeros(1, 28, 28), torch.tensor([9])  # a blank image labelled 9

    def train_once(seed: int, with_canary: bool) -> float:
        """One DP-SGD run with Opacus; the canary's −loss on the final model."""
        torch.manual_seed(seed)
        xs = torch.cat([x, canary_x]) if with_canary else x
        ys = torch.cat([y, canary_y]) if with_canary else y
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.Tanh(), nn.Linear(32, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        # the same explicit Poisson rate Q in both worlds (not 1/len(loader) of a batch size)
        loader = DPDataLoader(TensorDataset(xs, ys), sample_rate=Q,
                              generator=torch.Generator().manual_seed(seed))
        engine = PrivacyEngine(accountant="rdp")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=SIGMA,
            max_grad_norm=CLIP, poisson_sampling=False)  # the loader already samples
        assert abs(loader.sample_rate - Q) < 1e-12, loader.sample_rate
        loss_fn = nn.CrossEntropyLoss()
        steps = 0
        while steps < STEPS:
            for xb, yb in loader:
                optimizer.zero_grad()
                loss_fn(model(xb), yb).backward()
                optimizer.step()
                steps += 1
                if steps == STEPS:
                    break
        with torch.no_grad():
            return -float(loss_fn(model(canary_x), canary_y))

    scores_in = np.array([train_once(2 * r, True) for r in range(RUNS)])
    scores_out = np.array([train_once(2 * r + 1, False) for r in range(RUNS)])
    print(f"canary −loss with: {scores_in.mean():.3f} ± {scores_in.std():.3f}; "
          f"without: {scores_out.mean():.3f} ± {scores_out.std():.3f}")

# %% [markdown]
# ## The audit
#
# The same command a user types in a shell (`jaxaudit rdp --scores in.npy out.npy ...`), run as
# a subprocess. The table's "DV estimate" column is the DV point estimate raised to the best valid
# lower bound when it falls below it (marked `↑bound`); "± SE(samp.)" is the sampling spread of
# the DV point estimate, not its bias.

# %%
if HAVE_OPACUS:
    import subprocess
    import sys

    folder = Path(tempfile.mkdtemp(prefix="opacus_audit_"))
    np.save(folder / "in.npy", scores_in)
    np.save(folder / "out.npy", scores_out)
    subprocess.run([sys.executable, "-m", "jaxaudit", "rdp", "--scores", str(folder / "in.npy"),
                    str(folder / "out.npy"), "--noise-multiplier", str(SIGMA),
                    "--sampling-rate", str(Q), "--steps", str(STEPS), "--delta", "1e-5",
                    "--orders", "1.5,2,3", "--out", str(folder / "audit")], check=True)
    results = json.loads((folder / "audit" / "results.json").read_text())  # strict JSON
    for row in results["rows"]:
        flag = " (raised to bound)" if row["raised_to_bound"] else ""
        print(f"α = {row['order']:g}: accountant {row['accountant']:.3f}, DV estimate "
              f"{row['dv_estimate']:.3f}{flag}, DV lower {row['dv_lower']:.3f}, threshold lower "
              f"{row['threshold_lower']:.3f}")
    FIGURES.mkdir(parents=True, exist_ok=True)
    (FIGURES / "opacus_audit.png").write_bytes((folder / "audit" / "rdp_audit.png").read_bytes())
