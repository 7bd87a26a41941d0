"""A character-level GRU language model and candidate scoring by log-likelihood.

Model: embedding → GRU (flax ``GRUCell``) → dense logits over the vocabulary,
p(c_t | c_<t) = softmax(W h_t + b), h_t = GRU(h_{t−1}, E c_t). Trains in minutes on a CPU.

Scoring: the Secret Sharer's attack ranks every candidate x by

    log p(x, EOS | BOS, "user k's password is ") = Σ_j log p(x_j | prefix, x_<j) + log p(EOS | …).

The candidates share prefixes (all 10^L digit strings, or a password list), so they are scored
over their *prefix trie*, level by level: each trie node's hidden state is computed once from its
parent's, and a candidate's score is the sum of its nodes' character log-probabilities plus the
EOS term at its last node. For 10^4 digit strings that is 11,110 GRU steps per user instead of
50,000.

References:
  Cho et al., "Learning Phrase Representations using RNN Encoder-Decoder", arXiv 1406.1078 (GRU).
  Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", arXiv 1802.08232 (§ 4, ranking).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.typing import VariableDict
from jax.typing import ArrayLike

from jaxaudit.attacks.corpus import EOS, PAD, VOCAB, encode

__all__ = ["CharGRU", "sequence_log_likelihood", "CandidateTrie", "candidate_trie",
           "score_candidates"]


class CharGRU(nn.Module):
    """Character GRU: ``apply(params, tokens)`` → (B, T, V) next-character logits.

    ``apply(params, carry, token, method=CharGRU.step)`` advances one character.
    """

    vocab_size: int = len(VOCAB)
    embed_dim: int = 32
    hidden_dim: int = 128

    def setup(self) -> None:
        self.embed = nn.Embed(self.vocab_size, self.embed_dim)
        self.cell = nn.GRUCell(features=self.hidden_dim)
        self.head = nn.Dense(self.vocab_size)

    def initial_carry(self, batch: int) -> jax.Array:
        return jnp.zeros((batch, self.hidden_dim), jnp.float32)

    def step(self, carry: jax.Array, token: jax.Array) -> tuple[jax.Array, jax.Array]:
        carry, h = self.cell(carry, self.embed(token))
        return carry, self.head(h)

    def __call__(self, tokens: jax.Array) -> jax.Array:
        x = self.embed(tokens)  # (B, T, E)
        carry = jnp.zeros((tokens.shape[0], self.hidden_dim), x.dtype)

        def body(cell, c, xt):
            c, h = cell(c, xt)
            return c, h

        scan = nn.scan(body, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)
        _, hs = scan(self.cell, carry, x)
        return self.head(hs)


def sequence_log_likelihood(model: nn.Module, params: VariableDict, tokens: jax.Array
                            ) -> jax.Array:
    """Σ_t log p(tokens[t+1] | tokens[≤t]) over non-PAD targets, per record: (B,) float32.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> m = CharGRU(hidden_dim=8)
      >>> toks = jnp.asarray([encode("ab", 6)])
      >>> prm = m.init(jax.random.key(0), toks)
      >>> sequence_log_likelihood(m, prm, toks).shape
      (1,)
    """
    # flax types apply's result as Any | (out, variables); without mutable= it is the output
    logits = model.apply(params, tokens[:, :-1])
    targets = tokens[:, 1:]
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits),  # type: ignore[arg-type]
                               targets[..., None], -1)[..., 0]
    return jnp.sum(jnp.where(targets != PAD, logp, 0.0), axis=-1)


class CandidateTrie(NamedTuple):
    """Prefix trie of a candidate list, by level.

    Attributes:
      parents: tuple over levels j = 1..L of (N_j,) int32 index of each node's parent in level
        j − 1 (level 0 is the root, one node).
      chars: tuple of (N_j,) int32 token of each node's last character.
      leaf_level: (K,) int32 level of each candidate's last node.
      leaf_node: (K,) int32 index of that node in its level.
    """

    parents: tuple
    chars: tuple
    leaf_level: np.ndarray
    leaf_node: np.ndarray


def candidate_trie(candidates: Sequence[str]) -> CandidateTrie:
    """Build the prefix trie of ``candidates`` (strings over the vocabulary, non-empty).

    Examples:
      >>> t = candidate_trie(["ab", "ac", "b"])
      >>> [len(p) for p in t.parents], t.leaf_level.tolist()
      ([2, 2], [2, 2, 1])
    """
    if not candidates:
        raise ValueError("candidates must not be empty")
    index: list[dict] = [{"": 0}]
    parents: list[list[int]] = []
    chars: list[list[int]] = []
    leaf_level, leaf_node = [], []
    for cand in candidates:
        if not cand:
            raise ValueError("candidates must be non-empty strings")
        ids = encode(cand, len(cand) + 2)[1:-1]
        for j in range(1, len(cand) + 1):
            if len(index) <= j:
                index.append({})
                parents.append([])
                chars.append([])
            pre = cand[:j]
            if pre not in index[j]:
                index[j][pre] = len(parents[j - 1])
                parents[j - 1].append(index[j - 1][cand[: j - 1]])
                chars[j - 1].append(int(ids[j - 1]))
        leaf_level.append(len(cand))
        leaf_node.append(index[len(cand)][cand])
    return CandidateTrie(tuple(np.asarray(p, np.int32) for p in parents),
                         tuple(np.asarray(c, np.int32) for c in chars),
                         np.asarray(leaf_level, np.int32), np.asarray(leaf_node, np.int32))


def score_candidates(model: CharGRU, params: VariableDict, prefixes: Sequence[ArrayLike],
                     trie: CandidateTrie, *,
                     users_per_call: int = 16) -> np.ndarray:
    """log p(x, EOS | BOS, prefix_u) for every prefix u and candidate x: (U, K) float32.

    Args:
      model: :class:`CharGRU`.
      params: its parameters.
      prefixes: sequence of U int token arrays, each BOS + prefix text (no EOS, no PAD); they
        may differ in length.
      trie: :func:`candidate_trie` of the candidates.
      users_per_call: prefixes scored together (memory ∝ users_per_call × trie level size).

    Returns:
      (U, K) numpy array of log-likelihoods.
    """
    arrays = [np.asarray(p, np.int32) for p in prefixes]
    g = int(users_per_call)

    @jax.jit
    def run_prefix(prm, toks):
        carry = model.apply(prm, toks.shape[0], method=CharGRU.initial_carry)

        def body(c, t):
            return model.apply(prm, c, t, method=CharGRU.step)

        carry, logits = jax.lax.scan(body, carry, toks.T)
        return carry, jax.nn.log_softmax(logits[-1])

    @jax.jit
    def advance(prm, carry, logp, parent, char):
        # carry: (g, N_{j-1}, H), logp: (g, N_{j-1}, V) → states, log-probs and the
        # characters' log-probabilities at level j.
        c = carry[:, parent]
        char_logp = logp[:, parent, char]
        flat = c.reshape(-1, c.shape[-1])
        new, logits = model.apply(prm, flat, jnp.tile(char, g), method=CharGRU.step)
        n = parent.shape[0]
        return new.reshape(g, n, -1), jax.nn.log_softmax(logits).reshape(g, n, -1), char_logp

    levels = [(jnp.asarray(p), jnp.asarray(c)) for p, c in zip(trie.parents, trie.chars)]
    out = np.empty((len(arrays), trie.leaf_level.shape[0]), np.float32)
    by_len: dict[int, list[int]] = {}
    for i, p in enumerate(arrays):
        by_len.setdefault(p.shape[0], []).append(i)
    for group in by_len.values():
        for start in range(0, len(group), g):
            rows = group[start:start + g]
            toks = np.stack([arrays[i] for i in rows] + [arrays[rows[0]]] * (g - len(rows)))
            carry, logp = run_prefix(params, jnp.asarray(toks))
            carry, logp = carry[:, None, :], logp[:, None, :]
            cum = [np.zeros((g, 1), np.float32)]
            eos = [np.asarray(logp[:, :, EOS])]
            for (parent, char), parent_np in zip(levels, trie.parents):
                carry, logp, char_logp = advance(params, carry, logp, parent, char)
                cum.append(cum[-1][:, parent_np] + np.asarray(char_logp))
                eos.append(np.asarray(logp[:, :, EOS]))
            scores = np.empty((g, trie.leaf_level.shape[0]), np.float32)
            for level in np.unique(trie.leaf_level):
                sel = np.nonzero(trie.leaf_level == level)[0]
                nodes = trie.leaf_node[sel]
                scores[:, sel] = cum[level][:, nodes] + eos[level][:, nodes]
            out[rows] = scores[: len(rows)]
    return out
