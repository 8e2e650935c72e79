"""The confinement's own error."""


class ConfinementError(RuntimeError):
    """A piece named in `required=` did not take effect."""
