"""One static rule per module; importing this package registers them all."""

from . import (  # noqa: F401
    introspection,
    kevin_text,
    library_ops,
    monkeypatch,
    no_kernel,
    precision,
    reference_reuse,
    side_stream,
    try_except,
)
