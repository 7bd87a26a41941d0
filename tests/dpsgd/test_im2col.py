"""im2col, the patches behind every convolution of the ghost-clipping path, against XLA's own
convolution, and its transpose (col2im, what reverse mode runs) against the adjoint identity."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxaudit.dpsgd.models import im2col


def _conv_by_xla(x, kernel):
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), "VALID",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


@pytest.mark.slow
@pytest.mark.parametrize("shape,kh,kw", [((3, 12, 12, 16), 4, 4), ((2, 28, 28, 1), 5, 5),
                                         ((1, 7, 9, 3), 3, 2)])
def test_patches_times_kernel_is_the_convolution(shape, kh, kw):
    kx, kk = jax.random.split(jax.random.key(0))
    x = jax.random.normal(kx, shape)
    kernel = jax.random.normal(kk, (kh, kw, shape[-1], 5))
    n, h, w, _ = shape
    got = (im2col(x, kh, kw) @ kernel.reshape(-1, 5)).reshape(n, h - kh + 1, w - kw + 1, 5)
    np.testing.assert_allclose(got, _conv_by_xla(x, kernel), rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_col2im_is_the_adjoint_under_jit_and_vmap():
    kx, kg = jax.random.split(jax.random.key(1))
    x = jax.random.normal(kx, (4, 2, 10, 10, 3))  # a leading axis to vmap over
    f = jax.jit(jax.vmap(lambda a: im2col(a, 3, 3)))
    g = jax.random.normal(kg, f(x).shape)
    (back,) = jax.vjp(f, x)[1](g)
    # <im2col(x), g> = <x, col2im(g)>, both sides summed in float64
    lhs = np.sum(np.asarray(f(x), np.float64) * np.asarray(g, np.float64))
    rhs = np.sum(np.asarray(x, np.float64) * np.asarray(back, np.float64))
    assert abs(lhs - rhs) < 1e-4 * abs(lhs) + 1e-3
    # every input pixel is counted once per patch that holds it: col2im of ones
    (counts,) = jax.vjp(lambda a: im2col(a, 3, 3), x[0])[1](jnp.ones(f(x).shape[1:]))
    rows = np.minimum(np.minimum(np.arange(10) + 1, 10 - np.arange(10)), 3)
    np.testing.assert_array_equal(counts[0, :, :, 0], np.outer(rows, rows))
