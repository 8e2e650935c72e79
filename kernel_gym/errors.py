"""Errors raised for misuse of kernel-gym (bad config, unknown names).

Mistakes of the *agent* never raise: they come back as an observation and an outcome.
Only our own users' mistakes raise, and always one of these types.
"""

from __future__ import annotations

import difflib

from gymnasium.error import ResetNeeded


class KernelGymError(Exception):
    """Base class of every error kernel-gym raises on purpose."""


class UnknownNameError(KernelGymError, KeyError):
    """A lookup by name failed; the message lists close matches."""

    def __init__(self, kind: str, name: str, choices: list[str]):
        self.kind, self.name, self.choices = kind, name, sorted(choices)
        close = difflib.get_close_matches(str(name), self.choices, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        shown = ", ".join(self.choices[:20]) + (" ..." if len(self.choices) > 20 else "")
        super().__init__(f"unknown {kind} {name!r}.{hint} Known: {shown}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.args[0]


class UnknownTaskError(UnknownNameError):
    """No task with this id or path."""


class TaskFileNotFoundError(UnknownTaskError):
    """A task given as a file path (`.py` or `.c`) that does not exist."""

    def __init__(self, path: str):
        self.kind, self.name, self.choices = "task", path, []
        KernelGymError.__init__(self, f"task file not found: {path}")


class UnknownScoreError(UnknownNameError):
    """No score registered under this name."""


class UnknownPresetError(UnknownNameError):
    """No anti-hack or environment preset with this name."""


class ConfigError(KernelGymError, ValueError):
    """An argument has a value outside what it accepts."""


class TaskFormatError(KernelGymError, ValueError):
    """A task file does not follow the KernelBench format."""


class DeviceUnavailableError(ConfigError):
    """device="cuda" was asked for where no CUDA GPU is visible."""


class BackendUnavailableError(ConfigError):
    """A backend that cannot run on the device asked for (CuTe DSL or TileLang on device="cpu")."""


class EpisodeEndedError(KernelGymError, ResetNeeded):
    """step() after the episode ended (gymnasium's ResetNeeded): call reset() first."""


class SandboxError(KernelGymError, RuntimeError):
    """The sandbox itself failed (not the candidate): e.g. a worker cannot start."""
