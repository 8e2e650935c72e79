"""The installed kernel-gym's version (also the judge's socket name: clients of another version get their own judge)."""

__version__ = "0.1.0"
