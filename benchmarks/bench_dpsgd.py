"""Benchmark: seconds per canary-training run, SmallCNN, |D| = 100 (+ canary), T = 100 full-batch
DP-GD steps (Annamalai & De Cristofaro, arXiv 2405.14106; see benchmarks/README.md).

Every implementation computes the same run: θ₀ shared, then T times
θ ← θ − η (Σ_i clip_C(∇ℓ_i(θ)) + N(0, σ²C² I)) / n̄ over the |D⁻| = 100 images and the canary,
n̄ = |D⁻| (``DpsgdConfig``'s full-batch normaliser), ℓ_i the softmax cross-entropy, σ = C = η = 1.
Side by side in one process on the same data (the first 100 MNIST test images + a blank canary):
  * jaxaudit: ``canary_runs`` vmapped over R ∈ {1, 16, 64} runs (R/2 per world; R = 1 is
    ``train_run``), compile time excluded (a warm-up call with the same shapes);
  * Opacus 1.6 (``GradSampleModule`` + ``DPOptimizer``: per-sample gradients by hooks, clip, sum,
    noise), one run after another;
  * torch.func (``vmap(grad(functional_call))``), one run after another;
  * the JAX-native peers (``--jax-peers``, all three by default; ``--skip-jax-peers`` drops them),
    each written as its own documentation writes DP-SGD, one run after another (R = 1, a jitted
    step in a Python loop, as both libraries' MNIST examples do), compile time excluded:
      - ``jax_privacy``: jax_privacy 2.0's ``clipped_grad`` (vmap of the per-example gradient,
        clip, sum, divided by ``normalize_by`` = n̄) and ``noise_addition.gaussian_privatizer``
        (standard deviation σ · ``l2_norm_bound`` = σC/n̄), then ``optax.sgd(η)``, on the
        architecture written as a plain ``flax.linen`` model with ``nn.Conv`` (XLA's convolutions);
      - ``optax``: ``optax.contrib.dpsgd`` fed ``jax.vmap(jax.grad(loss))`` per-example gradients
        on the same flax model; it divides the noisy sum by the number of gradients it receives
        (|D⁻| + 1 with the canary), so its learning rate is η(|D⁻| + 1)/n̄;
      - ``jax_privacy_im2col``: the ``jax_privacy`` row with jaxaudit's SmallCNN in its im2col
        layout (``jaxaudit.dpsgd.models.fast_apply``) instead of the flax convolutions, so that
        the table separates the model layout from the clipping (ghost norms in jaxaudit,
        per-example gradients here);
    before timing them, :func:`check_peer_agreement` runs ``--check-steps`` noiseless steps
    (σ = 0) of each peer and of jaxaudit from the same parameters and refuses to time (exit
    status 1) when a peer's parameter updates or canary score differ from jaxaudit's by more
    than 1e-4 relative; then :func:`peer_noise_ratio` checks one noisy step's noise against
    ησC/n̄ (refused beyond 5%);
  * with ``--baseline``, jaxaudit's earlier configuration in the same process (ghost
    clipping on the whole batch, ``block_size=101``, and all runs vmapped at once,
    ``chunk_size=None``), next to the defaults (blocks of one example and one run per device
    on CPU), so the two are compared under the same machine load;
  * jaxaudit again on D forced host devices (``--host-devices``, default 2), in a subprocess of
    this script started with ``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (the flag must
    be set before JAX starts): the configuration the ``jaxaudit`` command and
    ``jaxaudit.sharding.use_all_cpu_cores`` give by default, one CPU device per core.
Opacus and torch.func are each timed (median of the repeats) at 1 torch thread and at one per core;
the faster count is reported.

Usage::

    python benchmarks/bench_dpsgd.py [--steps 100] [--repeats 2] [--runs 1,16,64]
        [--host-devices 2] [--baseline] [--block B] [--json out.json]
        [--jax-peers jax_privacy,optax,jax_privacy_im2col | --skip-jax-peers] [--check-steps 3]

Prints a markdown table: seconds per run (median of repeats) and Opacus's s/run divided by each;
the jaxaudit rows name their device count (this process: the devices JAX sees, normally 1 on
CPU); the header names the CPU (``/proc/cpuinfo``).

References:
  Abadi et al., "Deep Learning with Differential Privacy", CCS 2016, arXiv 1607.00133 (DP-SGD).
  Annamalai & De Cristofaro, "Nearly Tight Black-Box Auditing of Differentially Private Machine
  Learning", NeurIPS 2024, arXiv 2405.14106 (the canary runs and SmallCNN).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

os.environ.setdefault("JAXAUDIT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))


def torch_net():
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 5), torch.nn.MaxPool2d(2), torch.nn.Tanh(),
        torch.nn.Conv2d(16, 32, 4), torch.nn.MaxPool2d(2), torch.nn.Tanh(), torch.nn.Flatten(),
        torch.nn.Linear(512, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))


def opacus_run(x, y, steps, sigma, clip, lr):
    import torch
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(torch_net())
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=lr), noise_multiplier=sigma,
                      max_grad_norm=clip, expected_batch_size=x.shape[0], loss_reduction="sum")
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        return float(-torch.nn.functional.cross_entropy(model(x[-1:]), y[-1:]))


def torchfunc_run(x, y, steps, sigma, clip, lr):
    """T steps θ ← θ − lr (Σ_i clip_C(∇ℓ_i) + N(0, σ²C²I)): ``lr`` is η/n̄, as Opacus's with
    ``loss_reduction="sum"``."""
    import torch
    from torch.func import functional_call, grad, vmap

    net = torch_net()
    params = {k: v.detach() for k, v in net.named_parameters()}

    def loss(p, xi, yi):
        return torch.nn.functional.cross_entropy(functional_call(net, p, (xi[None],)), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    n = x.shape[0]
    for _ in range(steps):
        g = per_example(params, x, y)
        norms = torch.sqrt(sum(v.reshape(n, -1).pow(2).sum(1) for v in g.values()))
        f = 1.0 / torch.clamp(norms / clip, min=1.0)
        params = {k: params[k] - lr * (torch.einsum("n,n...->...", f, g[k])
                                       + sigma * clip * torch.randn_like(params[k]))
                  for k in params}
    with torch.no_grad():
        return float(-torch.nn.functional.cross_entropy(functional_call(net, params, (x[-1:],)), y[-1:]))


#: The JAX-native peers, in the order of the table (``--jax-peers`` names).
PEERS = ("jax_privacy", "optax", "jax_privacy_im2col")
#: Their rows in the table.
PEER_LABELS = {
    "jax_privacy": "jax_privacy 2.0 clipped_grad + gaussian_privatizer, flax nn.Conv CNN (sequential)",
    "optax": "optax.contrib.dpsgd, vmap(grad), flax nn.Conv CNN (sequential)",
    "jax_privacy_im2col": "jax_privacy 2.0 clipped_grad + gaussian_privatizer, jaxaudit's im2col "
                          "SmallCNN (sequential)",
}
#: The largest relative difference from jaxaudit at σ = 0 that :func:`check_peer_agreement` accepts.
AGREEMENT_TOLERANCE = 1e-4
#: How far from 1 :func:`peer_noise_ratio` may be (its standard error is about 0.005).
NOISE_TOLERANCE = 0.05


def flax_cnn():
    """SmallCNN's architecture as a JAX user writes it with ``flax.linen`` (XLA's convolutions):
    conv 16@5×5 → max pool 2 → tanh → conv 32@4×4 → max pool 2 → tanh → dense 32 → tanh →
    dense 10, on (N, 28, 28, 1) images. Its layer names and shapes are SmallCNN's, so
    :func:`flax_cnn_params` maps SmallCNN's parameters into it one to one."""
    import flax.linen as nn
    import jax.numpy as jnp

    class FlaxCNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(16, (5, 5), padding="VALID", name="conv1")(x)
            x = jnp.tanh(nn.max_pool(x, (2, 2), strides=(2, 2)))
            x = nn.Conv(32, (4, 4), padding="VALID", name="conv2")(x)
            x = jnp.tanh(nn.max_pool(x, (2, 2), strides=(2, 2)))
            x = x.reshape((x.shape[0], -1))
            x = jnp.tanh(nn.Dense(32, name="fc1")(x))
            return nn.Dense(10, name="fc2")(x)

    return FlaxCNN()


def flax_cnn_params(params):
    """jaxaudit's SmallCNN parameters (``SmallCNN().init`` format) as :func:`flax_cnn`'s
    ``params`` collection: the same arrays, checked leaf by leaf against the flax model's own
    initialisation (names, shapes, dtypes), so every implementation starts from the same θ₀."""
    import jax
    import jax.numpy as jnp

    def layout(tree):
        return [(jax.tree_util.keystr(path), tuple(a.shape), str(a.dtype))
                for path, a in jax.tree_util.tree_flatten_with_path(tree)[0]]

    expected = layout(jax.eval_shape(flax_cnn().init, jax.random.key(0),
                                     jnp.zeros((1, 28, 28, 1))))
    given = layout(params)
    if given != expected:
        raise ValueError(f"params do not fit the flax CNN: expected {expected}, got {given}")
    return params["params"]


def _softmax_cross_entropy(apply_fn, params, images, labels):
    """Mean cross-entropy of a batch (per-example gradients call it on a batch of one)."""
    import optax

    logits = apply_fn({"params": params}, images)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def _peer_apply(name):
    """The forward pass a peer trains: the flax CNN, or jaxaudit's im2col SmallCNN."""
    from jaxaudit.dpsgd import SmallCNN
    from jaxaudit.dpsgd.models import fast_apply

    if name == "jax_privacy_im2col":
        return functools.partial(fast_apply, SmallCNN())
    return flax_cnn().apply


def make_peer(name, images, labels, *, sigma, clip, lr, normalizer):
    """One DP-GD run of peer ``name`` on the whole batch, as its documentation writes it.

    Returns ``run(params, seed, steps) -> params``: ``params`` is the flax ``params`` collection
    (:func:`flax_cnn_params`), ``seed`` an integer for the noise, ``steps`` the T steps (a jitted
    step called in a Python loop, compiled on the first call). ``images`` (B, 28, 28, 1) and
    ``labels`` (B,) are the private data and the canary; ``normalizer`` is n̄.

    * ``jax_privacy``, ``jax_privacy_im2col``: ``jax_privacy.clipped_grad(loss, l2_clip_norm=C,
      batch_argnums=(1, 2), normalize_by=n̄)`` gives Σ_i clip_C(∇ℓ_i)/n̄,
      ``noise_addition.gaussian_privatizer(stddev=σ · l2_norm_bound)`` adds N(0, (σC/n̄)²), and
      ``optax.sgd(η)`` steps: θ − η(S + Z)/n̄ (the jax_privacy 2 MNIST example's recipe).
    * ``optax``: ``optax.contrib.dpsgd(η B/n̄, C, σ, seed)`` on ``jax.vmap(jax.grad(loss))``
      per-example gradients (optax's DP-SGD example): it releases (S + Z)/B, so the learning
      rate η B/n̄ gives the same step.
    """
    import jax
    import jax.numpy as jnp
    import optax

    if name not in PEERS:
        raise ValueError(f"peer must be one of {PEERS}, got {name!r}")
    apply_fn = _peer_apply(name)
    images, labels = jnp.asarray(images, jnp.float32), jnp.asarray(labels, jnp.int32)  # on device once

    def loss(params, batch_images, batch_labels):
        return _softmax_cross_entropy(apply_fn, params, batch_images, batch_labels)

    if name == "optax":
        def dpsgd(seed):
            with warnings.catch_warnings():  # optax 0.2.8's dpsgd passes the deprecated seed=
                warnings.simplefilter("ignore", DeprecationWarning)
                return optax.contrib.dpsgd(learning_rate=lr * labels.shape[0] / normalizer,
                                           l2_norm_clip=clip, noise_multiplier=sigma, seed=seed)

        tx = dpsgd(0)  # its update does not read the seed: that lives in the state init returns

        @jax.jit
        def train_step(params, opt_state, batch):
            batch = jax.tree.map(lambda a: a[:, None], batch)  # a batch of one per example
            grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(params, *batch)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state

        def run(params, seed, steps):
            opt_state = dpsgd(seed).init(params)
            for _ in range(steps):
                params, opt_state = train_step(params, opt_state, (images, labels))
            return jax.block_until_ready(params)

        return run

    import jax_privacy
    from jax_privacy import noise_addition

    grad_fn = jax_privacy.clipped_grad(loss, l2_clip_norm=clip, batch_argnums=(1, 2),
                                       normalize_by=normalizer)
    stddev = sigma * grad_fn.l2_norm_bound  # σC/n̄
    # the privatizer's update does not read the key it is built with (that lives in the state
    # its init returns), so one jitted step serves the privatizer of every run's seed
    privatizer = noise_addition.gaussian_privatizer(stddev=stddev, prng_key=jax.random.key(0))
    optimizer = optax.sgd(lr)

    @jax.jit
    def train_step(params, opt_state, noise_state, batch_images, batch_labels):
        clipped = grad_fn(params, batch_images, batch_labels)
        noisy, noise_state = privatizer.update(clipped, noise_state)
        updates, opt_state = optimizer.update(noisy, opt_state)
        return optax.apply_updates(params, updates), opt_state, noise_state

    def run(params, seed, steps):
        opt_state = optimizer.init(params)
        noise_state = noise_addition.gaussian_privatizer(
            stddev=stddev, prng_key=jax.random.key(seed)).init(params)
        for _ in range(steps):
            params, opt_state, noise_state = train_step(params, opt_state, noise_state, images,
                                                        labels)
        return jax.block_until_ready(params)

    return run


@functools.lru_cache(maxsize=8)
def _noiseless_step(clip, lr, normalizer):
    """jaxaudit's private step at σ = 0 (``make_private_step``, SmallCNN, n̄ = ``normalizer``,
    the step ``train_run`` scans): ``(prepare, init, jitted step)``, compiled once per process
    for the agreement and noise checks."""
    import jax

    from jaxaudit.dpsgd import DpsgdConfig, SmallCNN, make_private_step

    prepare, init, step = make_private_step(
        SmallCNN(), DpsgdConfig(clip_norm=clip, noise_multiplier=0.0, learning_rate=lr),
        normalizer=normalizer)
    return prepare, init, jax.jit(step)


def _relative_difference(a, b):
    """‖a − b‖₂ / ‖b‖₂ over all leaves of two pytrees (float64 on the host)."""
    import jax

    la = [np.asarray(v, np.float64).ravel() for v in jax.tree.leaves(a)]
    lb = [np.asarray(v, np.float64).ravel() for v in jax.tree.leaves(b)]
    num = np.sqrt(sum(np.sum((u - v) ** 2) for u, v in zip(la, lb, strict=True)))
    return float(num / np.sqrt(sum(np.sum(v ** 2) for v in lb)))


def peer_agreement(x, y, canary, params, *, steps=3, clip=1.0, lr=1.0, peers=PEERS):
    """Each peer against jaxaudit, noiseless (σ = 0), from the same parameters θ₀.

    jaxaudit's side: its private step (``make_private_step`` with ``DpsgdConfig(C, 0, η)`` and
    n̄ = |D⁻|, the step ``train_run`` scans) gives θ_T, and ``train_run`` gives the canary's score
    −CE(canary; θ_T). Each peer (:func:`make_peer`, σ = 0) gives θ_T^peer. The difference is

        max(‖Δθ^peer − Δθ‖₂ / ‖Δθ‖₂, |s^peer − s| / |s|),   Δθ = θ_T − θ₀,

    the relative difference of the parameter *updates* (θ₀ itself would mask a wrong step) and
    of the canary score (computed from θ_T^peer with jaxaudit's ``canary_score``).

    Args:
      x, y: D⁻, images (N, 28, 28) in [0, 1] and integer labels (N,).
      canary: (image (28, 28), label); it is trained on (the "in" world).
      params: θ₀ in ``SmallCNN().init``'s format.
      steps, clip, lr: T, C, η.
      peers: names from :data:`PEERS`, or a dict name -> ``run`` (as :func:`make_peer` returns,
        built at σ = 0) to check other implementations.

    Returns:
      dict peer name -> relative difference.
    """
    import jax
    import jax.numpy as jnp

    from jaxaudit.dpsgd import DpsgdConfig, SmallCNN, train_run
    from jaxaudit.dpsgd.canary_training import canary_score

    x, y = np.asarray(x, np.float32), np.asarray(y, np.int32)
    cx, cy = np.asarray(canary[0], np.float32), int(canary[1])
    images = np.concatenate([x, cx[None]])[..., None]
    labels = np.concatenate([y, [cy]]).astype(np.int32)
    normalizer = float(x.shape[0])
    model = SmallCNN()
    config = DpsgdConfig(clip_norm=clip, noise_multiplier=0.0, learning_rate=lr, steps=steps)
    prepare, init, step = _noiseless_step(float(clip), float(lr), normalizer)
    features, mask = prepare(images[..., 0]), jnp.ones(labels.shape, jnp.float32)
    ours, state = params, init(params)
    for k in jax.random.split(jax.random.key(0), steps):
        ours, state = step(k, ours, state, features, labels, mask)
    score = float(train_run(jax.random.key(0), model, params, (x, y), (cx, cy), config,
                            include_canary=True))
    theta0 = flax_cnn_params(params)
    delta = jax.tree.map(jnp.subtract, ours["params"], theta0)
    if not isinstance(peers, dict):
        peers = {name: make_peer(name, images, labels, sigma=0.0, clip=clip, lr=lr,
                                 normalizer=normalizer) for name in peers}
    out = {}
    for name, run in peers.items():
        theirs = run(theta0, 0, steps)
        their_score = float(canary_score(model, {"params": theirs}, (cx, cy)))
        out[name] = max(
            _relative_difference(jax.tree.map(jnp.subtract, theirs, theta0), delta),
            abs(their_score - score) / abs(score))
    return out


def check_peer_agreement(x, y, canary, params, *, steps=3, clip=1.0, lr=1.0, peers=PEERS,
                         tolerance=AGREEMENT_TOLERANCE):
    """:func:`peer_agreement`, printed; raises ``RuntimeError`` naming every peer whose relative
    difference exceeds ``tolerance`` (1e-4): a peer that computes another update is not timed."""
    diffs = peer_agreement(x, y, canary, params, steps=steps, clip=clip, lr=lr, peers=peers)
    for name, d in diffs.items():
        print(f"sigma = 0, {steps} steps: {name} vs jaxaudit, max relative difference {d:.2e}",
              flush=True)
    bad = {name: d for name, d in diffs.items() if not d <= tolerance}
    if bad:
        raise RuntimeError(f"peers disagree with jaxaudit at sigma = 0 beyond {tolerance:g} "
                           f"relative: {bad}; not timing them")
    return diffs


def peer_noise_ratio(x, y, canary, params, run, *, sigma, clip, lr):
    """The noise a peer adds in one step, in units of jaxaudit's: std(θ₁^peer − θ₁) / (ησC/n̄).

    θ₁^peer is one step of ``run`` (:func:`make_peer` built at ``sigma``) from θ₀ = ``params``,
    θ₁ one noiseless jaxaudit step (``make_private_step``, σ = 0, n̄ = |D⁻|); their difference is
    the peer's noise ηZ/n̄ (plus the gradients' disagreement, ≤ 1e-4 relative by
    :func:`check_peer_agreement`), and jaxaudit's ``DpsgdConfig`` gives Z the standard
    deviation σC per coordinate. Over SmallCNN's 25 386 parameters the ratio's standard error
    is about 0.5%, so a peer with the right noise gives 1.00 ± 0.02.
    """
    import jax
    import jax.numpy as jnp

    if not sigma > 0:
        raise ValueError(f"sigma must be > 0 to measure the noise, got {sigma}")
    x, y = np.asarray(x, np.float32), np.asarray(y, np.int32)
    cx, cy = np.asarray(canary[0], np.float32), int(canary[1])
    images = np.concatenate([x, cx[None]])
    labels = np.concatenate([y, [cy]]).astype(np.int32)
    normalizer = float(x.shape[0])
    prepare, init, step = _noiseless_step(float(clip), float(lr), normalizer)
    clean, _ = step(jax.random.key(0), params, init(params), prepare(images), labels,
                    jnp.ones(labels.shape, jnp.float32))
    noisy = run(flax_cnn_params(params), 0, 1)
    noise = np.concatenate([np.asarray(a - b, np.float64).ravel() for a, b in zip(
        jax.tree.leaves(noisy), jax.tree.leaves(clean["params"]), strict=True)])
    return float(np.std(noise) / (lr * sigma * clip / normalizer))


def cpu_model():
    """The CPU's "model name" from ``/proc/cpuinfo`` ("unknown CPU" where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def host_device_rows(devices, args):
    """jaxaudit's rows on ``devices`` forced host devices: this script in a subprocess with
    ``--skip-torch --host-devices 0`` and the flag in ``XLA_FLAGS`` (replacing any device count
    set there). R = 1 is left out: ``train_run`` is one run on one device whatever the count."""
    runs = ",".join(v for v in args.runs.split(",") if v.strip() and int(v) > 1)
    if not runs:
        return []
    from jaxaudit._xla_flags import DEVICE_COUNT_FLAG, with_cpu_flags

    flags = re.sub(DEVICE_COUNT_FLAG + r"=\S+", "", os.environ.get("XLA_FLAGS", ""))
    if args.xla_default_fusions:
        flags = f"{flags} {DEVICE_COUNT_FLAG}={devices}".strip()
    else:  # the jaxaudit command's flags: that device count, YNNPACK fusions off
        flags = with_cpu_flags(flags, devices)
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
    print(f"[{devices} host devices] XLA_FLAGS={flags}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out_json = os.path.join(tmp, "rows.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--skip-torch", "--host-devices", "0",
               "--steps", str(args.steps), "--repeats", str(args.repeats), "--runs", runs,
               "--unroll", str(args.unroll), "--json", out_json, "--skip-jax-peers"]
        if args.chunk is not None:
            cmd += ["--chunk", str(args.chunk)]
        if args.block is not None:
            cmd += ["--block", str(args.block)]
        if args.baseline:
            cmd += ["--baseline"]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"jaxaudit on {devices} host devices failed:\n{out.stderr[-3000:]}")
        for line in out.stdout.splitlines():
            if line.startswith("jaxaudit R="):
                print(f"[{devices} host devices] {line}", flush=True)
        with open(out_json) as f:
            return [(row["name"], row["runs"], row["seconds_per_run"]) for row in json.load(f)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--runs", default="1,16,64")
    ap.add_argument("--chunk", type=int, default=None, help="jaxaudit runs per vmapped chunk")
    ap.add_argument("--unroll", type=int, default=10)
    ap.add_argument("--block", type=int, default=None,
                    help="examples per ghost-clipping block (default: the library's, 1 on CPU)")
    ap.add_argument("--baseline", action="store_true",
                    help="also time the earlier configuration (block 101, all runs "
                    "vmapped together) in this process")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--host-devices", default="2",
                    help="comma-separated forced host-device counts to time jaxaudit on as well, "
                    "each in a subprocess (0: none; default 2, the all-cores configuration of a "
                    "two-core machine)")
    ap.add_argument("--jax-peers", default=",".join(PEERS),
                    help="comma-separated JAX-native peers to time, each checked against "
                    f"jaxaudit at sigma = 0 first (default: all of {', '.join(PEERS)})")
    ap.add_argument("--skip-jax-peers", action="store_true",
                    help="time no JAX-native peer (jax_privacy, optax.contrib.dpsgd)")
    ap.add_argument("--check-steps", type=int, default=3,
                    help="noiseless steps of the peers' agreement check (default 3)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--xla-default-fusions", action="store_true",
                    help="host-device rows: XLA's own YNNPACK fusions, not the jaxaudit command's "
                    "--xla_cpu_experimental_ynn_fusion_type= (the before/after of that flag)")
    args = ap.parse_args(argv)
    peers = [] if args.skip_jax_peers else [v.strip() for v in args.jax_peers.split(",") if v.strip()]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown:
        ap.error(f"--jax-peers: unknown peer(s) {unknown}; known: {', '.join(PEERS)}")
    if args.check_steps < 1:
        ap.error(f"--check-steps must be at least 1, got {args.check_steps}")
    warnings.filterwarnings("ignore")

    import jax
    import jax.numpy as jnp

    from jaxaudit.datasets import load_mnist
    from jaxaudit.dpsgd import DpsgdConfig, SmallCNN, canary_runs, train_run

    images, labels = load_mnist(split="test")
    x = images[:100].astype(np.float32) / 255.0
    y = labels[:100].astype(np.int32)
    canary = (np.zeros((28, 28), np.float32), 3)
    sigma, clip, lr, T = 1.0, 1.0, 1.0, args.steps
    model = SmallCNN()
    params = model.init(jax.random.key(0), jnp.asarray(x[:1]))
    rows = []
    config = DpsgdConfig(noise_multiplier=sigma, clip_norm=clip, steps=T, learning_rate=lr,
                         unroll=args.unroll)

    if not args.skip_torch:
        import torch

        xt = torch.from_numpy(np.concatenate([x, canary[0][None]])[:, None])
        yt = torch.from_numpy(np.concatenate([y, [canary[1]]]).astype(np.int64))
        def best_of_thread_counts(run):
            """(s/run, threads): the median of the repeats at 1 torch thread and at one per
            core, whichever is faster (benchmarks/README.md: a single short timing chose the
            thread count unreliably)."""
            best = None
            for threads in sorted({1, os.cpu_count() or 1}):
                torch.set_num_threads(threads)
                run(2)  # warm-up
                t = timed(lambda: run(T), args.repeats)
                print(f"  torch threads {threads}: {t:.3f} s/run", flush=True)
                if best is None or t < best[0]:
                    best = (t, threads)
            return best

        t_opacus, threads = best_of_thread_counts(
            lambda steps: opacus_run(xt, yt, steps, sigma, clip, lr / x.shape[0]))
        rows.append(("Opacus 1.6 (sequential)", 1, t_opacus))
        print(f"opacus: {t_opacus:.3f} s/run (torch threads {threads})", flush=True)
        t_func, threads = best_of_thread_counts(
            lambda steps: torchfunc_run(xt, yt, steps, sigma, clip, lr / x.shape[0]))
        rows.append(("torch.func vmap(grad) (sequential)", 1, t_func))
        print(f"torch.func: {t_func:.3f} s/run (torch threads {threads})", flush=True)

    if peers:  # refuse to time a peer that computes another step than jaxaudit's
        try:
            check_peer_agreement(x, y, canary, params, steps=args.check_steps, clip=clip, lr=lr,
                                 peers=peers)
        except RuntimeError as err:
            sys.exit(f"bench_dpsgd: {err}")
        peer_images = np.concatenate([x, canary[0][None]])[..., None]  # (101, 28, 28, 1)
        peer_labels = np.concatenate([y, [canary[1]]]).astype(np.int32)
        theta0 = flax_cnn_params(params)
        for name in peers:
            run = make_peer(name, peer_images, peer_labels, sigma=sigma, clip=clip, lr=lr,
                            normalizer=float(x.shape[0]))
            t0 = time.perf_counter()
            run(theta0, 0, 1)
            compile_and_first = time.perf_counter() - t0
            ratio = peer_noise_ratio(x, y, canary, params, run, sigma=sigma, clip=clip, lr=lr)
            print(f"{name}: one step's noise std / (lr sigma C / n) = {ratio:.3f}", flush=True)
            if not abs(ratio - 1.0) <= NOISE_TOLERANCE:
                sys.exit(f"bench_dpsgd: {name} adds noise {ratio:.3f} times jaxaudit's "
                         f"(tolerance {NOISE_TOLERANCE}); not timing it")
            t = timed(lambda run=run: run(theta0, 1, T), args.repeats)
            rows.append((PEER_LABELS[name], 1, t))
            print(f"{name}: {t:.3f} s/run (first call incl. compile {compile_and_first:.1f} s, "
                  "one step)", flush=True)

    configs = [("", args.block, args.chunk)]
    if args.baseline:  # the earlier default: whole-batch ghost clipping, all runs vmapped
        configs.append((" [before: block 101, runs vmapped together]", x.shape[0] + 1, "all"))
    for r in (int(v) for v in args.runs.split(",")):
        for label, block, chunk in configs:
            if r == 1:
                fn = lambda block=block: jax.block_until_ready(train_run(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), include_canary=True))
            elif chunk == "all":  # the old default: all 2R runs in one vmapped chunk
                fn = lambda r=r, block=block: canary_runs(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), num_runs=r // 2, chunk_size=r)
            else:
                fn = lambda r=r, block=block, chunk=chunk: canary_runs(
                    jax.random.key(1), model, params, (x, y), canary,
                    config._replace(block_size=block), num_runs=r // 2, chunk_size=chunk)
            t0 = time.perf_counter()
            fn()
            compile_and_first = time.perf_counter() - t0
            t = timed(fn, args.repeats if r < 64 else max(1, args.repeats - 1))
            devices = len(jax.devices())
            rows.append((f"jaxaudit vmapped, R = {r}, {devices} device{'s' * (devices > 1)}{label}",
                         r, t / r))
            print(f"jaxaudit R={r}{label}: {t / r:.3f} s/run (first call incl. compile "
                  f"{compile_and_first:.1f} s)", flush=True)

    for devices in (int(v) for v in args.host_devices.split(",") if v.strip()):
        if devices > 0:
            rows.extend(host_device_rows(devices, args))
    # each R's jaxaudit rows side by side: this process's device count, then the forced counts
    rows = ([row for row in rows if not row[0].startswith("jaxaudit")]
            + sorted((row for row in rows if row[0].startswith("jaxaudit")), key=lambda row: row[1]))

    ref = next((s for name, _, s in rows if name.startswith("Opacus")), None)
    print(f"\nSmallCNN, |D| = 100 + canary, T = {T} full-batch steps, {cpu_model()}, "
          f"{os.cpu_count()} CPUs")
    print("| implementation | runs per call | s/run | Opacus s/run ÷ this |")
    print("|---|---|---|---|")
    for name, r, s in rows:
        ratio = f"{ref / s:.2f}" if ref else "n/a"
        print(f"| {name} | {r} | {s:.3f} | {ratio} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(name=n, runs=r, seconds_per_run=s) for n, r, s in rows], f, indent=1)


if __name__ == "__main__":
    main()
