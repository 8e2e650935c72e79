"""kernel-gym: GPU-kernel optimization as a multi-turn Gymnasium environment.

    >>> import gymnasium as gym, kernel_gym
    >>> env = gym.make("KernelRefine-v0", task="level1/relu", device="cpu")

Importing this package registers every environment id (see kernel_gym.registration) and touches no GPU.
"""

from kernel_gym import forking
from kernel_gym.registration import register_envs
from kernel_gym.version import __version__

register_envs()
forking.register()  # a forked child runs torch on one thread (GNU OpenMP hangs a child forked after use)


def __getattr__(name: str):
    # Heavy modules load on first use, so `import kernel_gym` stays cheap (no torch import).
    if name == "KernelRefineEnv":
        from kernel_gym.env import KernelRefineEnv

        return KernelRefineEnv
    if name in ("EvalJob", "EvalConfig"):
        from kernel_gym.eval import job

        return getattr(job, name)
    if name in ("evaluate_many", "LocalEvaluator"):
        from kernel_gym.judge import local

        return getattr(local, name)
    if name in ("EvalResult", "Outcome"):
        from kernel_gym.eval import result

        return getattr(result, name)
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"kernel_gym.{name}")
    raise AttributeError(f"module 'kernel_gym' has no attribute {name!r}")


_SUBMODULES = ("rollout", "metrics", "policies", "rewards", "tasks", "checks", "samples", "integrations")


__all__ = ["KernelRefineEnv", "EvalJob", "EvalConfig", "EvalResult", "LocalEvaluator", "Outcome", "evaluate_many",
           "register_envs", "__version__"]
