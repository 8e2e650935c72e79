"""Where evaluation runs on this machine: "auto" resolved, and device="cuda" refused early where no GPU is visible."""

from __future__ import annotations

from kernel_gym.errors import DeviceUnavailableError


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def local_device(device: str) -> str:
    """The device of a worker pool on this machine: "auto" -> "cuda" when a GPU is visible, else "cpu".

    Raises `DeviceUnavailableError` (one line, before any worker starts) for "cuda" without a visible GPU."""
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device == "cuda" and not cuda_available():
        raise DeviceUnavailableError(
            "device='cuda' but no CUDA GPU is visible on this machine (torch.cuda.is_available() is False): use "
            "device='cpu' (the CPU backend, Triton under its interpreter) or 'auto', or evaluate on GPU machines "
            "through a remote evaluator (docs/distributed.md)")
    return device
