"""Evaluation on a Ray cluster: one actor per GPU, each holding a warm sandbox pool.

    ev = RayEvaluator("auto")                          # connect to a running cluster (or None: start a local one)
    env = gym.make("KernelRefine-v0", task="level1/relu", evaluator=ev)
    results = ev.evaluate_many(jobs)                   # spread over every actor, in the order of `jobs`

How a job runs:
1. Static checks (source only, cheap) run before the evaluator, in the env (`kernel_gym.eval.evaluator.evaluate_job`, the
   one place they run for every evaluator), so rejected jobs never take a GPU; the actors only evaluate.
2. The scheduler picks the least-loaded live actor with a free slot (each actor takes `workers_per_actor` jobs at
   a time, and the caller blocks while every slot is busy), then calls the actor, which runs the job in its
   `LocalEvaluator` pool exactly as local evaluation does, so verdicts are identical.
3. Timing exclusivity: an actor owns one GPU (Ray sets its CUDA_VISIBLE_DEVICES) and, with the default
   `workers_per_actor=1`, has one job in flight, so nothing else runs on that GPU while a candidate is timed.
   `workers_per_actor > 1` overlaps compiles, but then timed runs can overlap too (a logged warning says so).
4. When an actor dies mid-job (node lost, actor killed, host OOM), the job is retried once on a restarted actor;
   if that dies too, the result is `Outcome.CRASH` whose message says the evaluation infrastructure failed twice.
   A candidate that crashes its sandbox worker does not kill the actor: that is a normal CRASH verdict.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kernel_gym.errors import ConfigError, KernelGymError
from kernel_gym.eval.job import EvalJob
from kernel_gym.eval.result import EvalResult, Outcome
from kernel_gym.judge.local import LocalEvaluator

log = logging.getLogger(__name__)

# Slack on top of a job's own compile + run limits before the caller gives up on an actor that does not answer:
# a replacement sandbox worker may have to start (torch import, CUDA init), and the result is confirmed by a ping.
_ANSWER_SLACK_S = 300.0


def _ray():
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        raise KernelGymError("RayEvaluator needs Ray: pip install 'kernel-gym[ray]'") from e
    return ray


class EvalActor:
    """Runs inside a Ray actor: a warm `LocalEvaluator` on the actor's device (its one GPU, or the CPU)."""

    def __init__(self, device: str, workers: int, memory_limit_gb: float | None):
        self.device = device
        self.local = LocalEvaluator(device, workers=workers, memory_limit_gb=memory_limit_gb)
        self.local.start()
        self._cpu: LocalEvaluator | None = None  # cpu jobs sent to a GPU actor get a small pool of their own
        self._cpu_lock = threading.Lock()

    def ready(self) -> dict[str, Any]:
        """Block until the sandbox workers are initialized; says where this actor runs."""
        import ray

        self.local.pool.warm_up()
        return {"pid": os.getpid(), "node": ray.util.get_node_ip_address(), "device": self.device,
                "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def _for(self, device: str) -> LocalEvaluator | None:
        if device == self.device:
            return self.local
        if device != "cpu":
            return None
        with self._cpu_lock:
            if self._cpu is None:
                self._cpu = LocalEvaluator("cpu", workers=1)
            return self._cpu

    def evaluate(self, job_dict: dict[str, Any]) -> dict[str, Any]:
        job = EvalJob.from_dict(job_dict)
        local = self._for(job.config.device)
        if local is None:
            return EvalResult(outcome=Outcome.UNSUPPORTED, backend=job.backend,
                              message=f"this evaluation actor has no {job.config.device} device "
                                      f"(it runs on {self.device})").to_dict()
        return local.evaluate(job).to_dict()

    def close(self) -> None:
        self.local.close()
        if self._cpu is not None:
            self._cpu.close()


@dataclass(eq=False)
class _Slot:
    """One actor position: its current handle, how many of our jobs it runs, how often it was replaced."""

    index: int
    handle: Any
    ready_ref: Any
    generation: int = 0
    in_flight: int = 0
    done: int = 0
    restarts: int = 0
    info: dict[str, Any] = field(default_factory=dict)


class RayEvaluator:
    """Evaluator protocol over Ray actors (see the module docstring). Thread-safe; share one across envs.

    | argument | default | meaning |
    |---|---|---|
    | address | None | `ray.init` address when Ray is not initialized yet: None (start a local cluster, or RAY_ADDRESS), "auto", "ray://host:10001" |
    | actors | None | number of actors; None: one per GPU free in the cluster now (cuda), 1 (cpu) |
    | device | "auto" | "cuda", "cpu", or "auto" (cuda when the cluster has GPUs) |
    | num_gpus_per_actor | None | GPUs an actor reserves; None: 1 on cuda, 0 on cpu |
    | num_cpus_per_actor | 1.0 | CPUs an actor reserves (its sandbox workers compile on them) |
    | workers_per_actor | 1 | sandbox workers (concurrent jobs) per actor; 1 keeps timing exclusive per GPU |
    | memory_limit_gb | None | address-space limit of each cpu sandbox worker |
    | resources | None | custom Ray resources an actor needs, e.g. {"kernel_eval": 1} to stay on evaluation nodes |
    | init_kwargs | None | extra `ray.init` arguments (e.g. runtime_env) |
    """

    def __init__(self, address: str | None = None, *, actors: int | None = None, device: str = "auto",
                 num_gpus_per_actor: float | None = None, num_cpus_per_actor: float = 1.0,
                 workers_per_actor: int = 1, memory_limit_gb: float | None = None,
                 resources: dict[str, float] | None = None, init_kwargs: dict[str, Any] | None = None):
        ray = _ray()
        if workers_per_actor < 1:
            raise ConfigError("workers_per_actor must be at least 1")
        if device not in ("auto", "cuda", "cpu"):
            raise ConfigError(f"device must be 'cuda', 'cpu' or 'auto', not {device!r}")
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, **(init_kwargs or {}))
        elif address is not None:
            log.info("Ray is already initialized; RayEvaluator ignores address=%r", address)
        cluster = ray.cluster_resources()
        self.device = device if device != "auto" else ("cuda" if cluster.get("GPU", 0) >= 1 else "cpu")
        gpus = num_gpus_per_actor if num_gpus_per_actor is not None else (1 if self.device == "cuda" else 0)
        if actors is None:  # one per GPU that is free now (a training job may hold the others)
            free = ray.available_resources().get("GPU", 0)
            actors = max(1, int(free // gpus)) if self.device == "cuda" and gpus else 1
        if actors < 1:
            raise ConfigError("a RayEvaluator needs at least one actor")
        if workers_per_actor > 1 and self.device == "cuda":
            log.warning("workers_per_actor=%d: jobs on one GPU overlap, so timed runs may overlap too",
                        workers_per_actor)
        self.workers_per_actor = workers_per_actor
        self.memory_limit_gb = memory_limit_gb
        self._options = {"num_gpus": gpus, "num_cpus": num_cpus_per_actor, "max_concurrency": workers_per_actor,
                         "max_restarts": 0, **({"resources": resources} if resources else {})}
        self._remote = ray.remote(EvalActor)
        self._prefix = f"kernel_gym_eval_{uuid.uuid4().hex[:8]}"
        self._cond = threading.Condition()
        self._closed = False
        self._slots = [self._new_slot(i) for i in range(actors)]

    # ---- actors ----------------------------------------------------------------------------------------
    def _new_slot(self, index: int, old: _Slot | None = None) -> _Slot:
        generation = old.generation + 1 if old else 0
        handle = self._remote.options(name=f"{self._prefix}_{index}_{generation}", **self._options).remote(
            self.device, self.workers_per_actor, self.memory_limit_gb)
        if old is None:
            return _Slot(index, handle, handle.ready.remote())
        old.handle, old.ready_ref, old.generation, old.info = handle, handle.ready.remote(), generation, {}
        old.restarts += 1
        return old

    def _restart(self, slot: _Slot, generation: int, why: str) -> None:
        """Replace the slot's actor, once per death even when several of its jobs notice it."""
        ray = _ray()
        with self._cond:
            if slot.generation != generation or self._closed:
                return
            log.warning("evaluation actor %d died (%s); starting a new one", slot.index, why)
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:  # already gone
                pass
            self._new_slot(slot.index, slot)
            self._cond.notify_all()

    def warm_up(self, timeout_s: float | None = 600.0) -> list[dict[str, Any]]:
        """Block until every actor has started its sandbox workers; returns where each runs (pid, node, GPUs)."""
        ray = _ray()
        try:
            infos = ray.get([s.ready_ref for s in self._slots], timeout=timeout_s)
        except ray.exceptions.GetTimeoutError as e:
            raise KernelGymError(f"evaluation actors not ready after {timeout_s} s: does the cluster have "
                                 f"{self._options['num_gpus']} GPU(s) and {self._options['num_cpus']} CPU(s) free "
                                 f"for each of {len(self._slots)} actors? (ray status)") from e
        for slot, info in zip(self._slots, infos):
            slot.info = info
        return infos

    @property
    def actors(self) -> list[Any]:
        """The current actor handles (a dead one is replaced by the next job that meets it)."""
        return [s.handle for s in self._slots]

    @property
    def capacity(self) -> int:
        """Jobs that can run at once across all actors."""
        return len(self._slots) * self.workers_per_actor

    def stats(self) -> list[dict[str, Any]]:
        """Per actor: jobs done, jobs in flight, restarts, and where it runs (after warm_up)."""
        with self._cond:
            return [{"actor": s.index, "done": s.done, "in_flight": s.in_flight, "restarts": s.restarts, **s.info}
                    for s in self._slots]

    # ---- scheduling -------------------------------------------------------------------------------------
    def _acquire(self) -> tuple[_Slot, int, Any]:
        """The least-loaded actor with a free slot (ties: the one that has done least); blocks while all are busy."""
        with self._cond:
            while True:
                if self._closed:
                    raise KernelGymError("the RayEvaluator is closed")
                free = [s for s in self._slots if s.in_flight < self.workers_per_actor]
                if free:
                    slot = min(free, key=lambda s: (s.in_flight, s.done, s.index))
                    slot.in_flight += 1
                    return slot, slot.generation, slot.handle
                self._cond.wait()

    def _release(self, slot: _Slot, finished: bool) -> None:
        with self._cond:
            slot.in_flight -= 1
            slot.done += int(finished)
            self._cond.notify()

    def evaluate(self, job: EvalJob) -> EvalResult:
        """Static checks here, then one actor; retried once if the actor dies, CRASH if it dies again."""
        ray = _ray()
        payload = job.to_dict()
        timeout_s = job.config.compile_timeout_s + job.config.run_timeout_s + _ANSWER_SLACK_S
        deaths: list[str] = []
        for _attempt in range(2):
            slot, generation, handle = self._acquire()
            finished = False
            try:
                ref = handle.evaluate.remote(payload)
                result = EvalResult.from_dict(ray.get(ref, timeout=timeout_s))
                finished = True
                return result
            except ray.exceptions.RayActorError as e:
                why = f"actor {slot.index} died: {_first_line(e)}"
            except ray.exceptions.GetTimeoutError:
                why = f"actor {slot.index} gave no answer within {timeout_s:.0f} s"
            finally:
                self._release(slot, finished)
            deaths.append(why)
            self._restart(slot, generation, why)
        return EvalResult(outcome=Outcome.CRASH, backend=job.backend, worker_recycled=True, infra_failure=True,
                          message="the evaluation infrastructure failed twice on this job, so it was not retried "
                                  "again (this says nothing about the kernel's correctness): " + "; then ".join(deaths))

    def evaluate_many(self, jobs: list[EvalJob]) -> list[EvalResult]:
        """Evaluate jobs concurrently over every actor; results in the order of `jobs`."""
        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(self.capacity, len(jobs)))) as pool:
            return list(pool.map(self.evaluate, jobs))

    # ---- lifetime ---------------------------------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> RayEvaluator:
        return self  # shared actors, not a value (gym.make deep-copies its kwargs)

    def __reduce__(self):
        raise KernelGymError("a RayEvaluator cannot be sent to another process (it owns its actors and their "
                             "scheduler): share one across threads or a SyncVectorEnv, or make one per process")

    def close(self) -> None:
        """Stop the actors (and Ray itself when this evaluator started it)."""
        ray = _ray()
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            slots = list(self._slots)
        try:  # a clean stop first for started actors, so that their sandbox workers' folders are removed too
            refs = [s.ready_ref for s in slots]
            started, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            ray.get([s.handle.close.remote() for s in slots if s.ready_ref in started], timeout=30)
        except Exception:  # a dead or stuck actor: killing it below is enough (its workers die with it)
            pass
        for slot in slots:
            try:
                ray.kill(slot.handle, no_restart=True)
            except Exception:
                pass
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__
