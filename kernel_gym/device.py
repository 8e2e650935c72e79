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


# What the judge of each device cannot see (info["blind_spots"], docs/anti-hacking.md): a verdict on this device says
# nothing about these. On cuda the profiler's kernel share and the judge's clock cover library compute.
BLIND_SPOTS = {
    "cpu": (
        "library compute outside torch's dispatcher (numpy or a BLAS on a copy of an input, or reached around the "
        "refused numpy/DLPack views of the inputs): the op audit and the launch count are the runner's own "
        "evidence, a solution can forge them, and the CPU backend has no profiler; the GPU profiler is the check",
        "speed: wall-clock timing of the Triton interpreter says nothing about GPU speed",
        "memory safety: an out-of-bounds load under the Triton interpreter reads garbage silently",
        "CUDA kernels: compiled and resource-checked, never run (outcome unsupported)",
    ),
    "cuda": (),
}


# Measured with triton 3.8 under TRITON_INTERPRET=1: the interpreter keeps bfloat16 as raw uint16 (numpy has no
# bfloat16) and computes on those bits (x * y, tl.dot of bf16 tiles: errors of 1e10 and more); a value cast to fp32
# first computes right, and fp16 runs correctly throughout.
CPU_BF16 = ("bf16 arithmetic under Triton's CPU interpreter runs on the raw bits (numpy has no bfloat16): a kernel "
            "that computes in bf16 (tl.dot of bf16 tiles included) reads as a mismatch on cpu; only work cast to "
            "fp32 first is right. fp16 runs correctly on cpu; judge bf16 kernels on a GPU")


def blind_spots(device: str, dtype: str | None = None) -> list[str]:
    """What the judge on `device` cannot see, for a job of `dtype` (empty where nothing is known)."""
    spots = list(BLIND_SPOTS.get(device, ()))
    if device == "cpu" and dtype == "bfloat16":
        spots.append(CPU_BF16)
    return spots
