"""The jaxpr walker shared by the composition tests: which primitives a traced function uses,
sub-jaxprs (jit, loops, conds, custom derivatives) included, and whether any is a host callback."""

import jax

#: Primitives that leave XLA for the host.
CALLBACKS = {"pure_callback", "io_callback", "debug_callback", "callback", "host_callback"}


def primitives(jaxpr, seen=None) -> set:
    """Names of every primitive in a (closed) jaxpr and its sub-jaxprs."""
    seen = set() if seen is None else seen
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        seen.add(eqn.primitive.name)
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    primitives(sub, seen)
    return seen


def host_callbacks(fn, *args) -> set:
    """The host-callback primitives in ``fn``'s jaxpr at ``args`` (empty for a pure XLA core)."""
    return primitives(jax.make_jaxpr(fn)(*args)) & CALLBACKS
