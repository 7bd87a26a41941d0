"""The one validation layer (internal): argument checks shared by every public function, one
module per domain (``core``: numbers, probabilities, shapes, keys; ``scores``; ``graphs``;
``orders``; ``paths``). Validators raise ``ValueError``/``TypeError`` naming the argument; they
skip traced values, so a public function validates at its outermost concrete call and stays
traceable inside the user's ``jax.jit``/``jax.vmap``/``jax.grad``.
"""

from jaxaudit._validation.core import (
    ArgumentTypeError,
    _as_array,
    _describe,
    as_scalar,
    as_vector,
    check_at_least,
    check_bool,
    check_broadcast,
    check_choice,
    check_chunk_size,
    check_finite,
    check_instance,
    check_integer,
    check_key,
    check_nonnegative,
    check_nonnegative_finite,
    check_numeric,
    check_positive,
    check_positive_finite,
    check_probability,
    check_shape,
    host_seed,
    is_traced,
    plain,
    typed_key,
)
from jaxaudit._validation.graphs import check_graph, check_labels
from jaxaudit._validation.orders import check_order_limits, check_orders
from jaxaudit._validation.paths import check_input_path, check_output_dir, check_output_file
from jaxaudit._validation.scores import (
    check_binary,
    check_mask,
    check_score_vector,
    check_scores_and_masks,
)

__all__ = [
    "ArgumentTypeError",
    "_as_array",
    "_describe",
    "as_scalar",
    "as_vector",
    "check_at_least",
    "check_bool",
    "check_broadcast",
    "check_choice",
    "check_chunk_size",
    "check_finite",
    "check_instance",
    "check_integer",
    "check_key",
    "check_nonnegative",
    "check_nonnegative_finite",
    "check_numeric",
    "check_positive",
    "check_positive_finite",
    "check_probability",
    "check_shape",
    "host_seed",
    "typed_key",
    "is_traced",
    "plain",
    "check_graph",
    "check_labels",
    "check_order_limits",
    "check_orders",
    "check_input_path",
    "check_output_dir",
    "check_output_file",
    "check_binary",
    "check_mask",
    "check_score_vector",
    "check_scores_and_masks",
]
