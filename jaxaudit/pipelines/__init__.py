"""Library pipelines: each audit that a ``jaxaudit`` command runs, as one function that a user
calls from Python with a configuration ``NamedTuple``, an optional run folder and an optional
progress callback, returning the result types (docs/architecture.md, "Pipelines")."""

__all__: list[str] = []
