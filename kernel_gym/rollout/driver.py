"""The rollout driver, `evaluate`: K trajectories x T turns per task, for several configurations, through one shared
evaluator. (It drives envs; the processes that run candidate code are the runners of kernel_gym/runner/.)

Each trajectory is its own env (`max_turns = T`) on the shared evaluator; up to `concurrency` are live at once.
Two schedules (RolloutConfig.schedule):
- async (servers, scripts, replays): each live trajectory runs on its own thread: one request, one step, repeat.
  Nothing waits for the slowest completion of a batch; the evaluator's worker pool queues the steps.
- rounds (a local model, `policy.batched`): one batched `generate` call answers every live trajectory, then their
  envs step in parallel (as many threads as the evaluator has workers); finished trajectories are replaced by
  waiting ones, so short and long configurations share rounds.
Every step is logged as it finishes (kernel_gym.rollout.log), so a killed run loses at most its unfinished steps,
and running it again continues each unfinished trajectory from its last logged turn."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ALL_COMPLETED, FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.metrics import ConfigMetrics, Trajectory, not_okay_reason, summarize
from kernel_gym.policies.base import Policy, PolicyError, Request, as_text, make_policy
from kernel_gym.rollout import log as rlog
from kernel_gym.rollout.budget import DEFAULT_CONFIGS, Budget, parse_budgets, resolve_tasks, unequal_budgets
from kernel_gym.rollout.progress import progress_bar

logger = logging.getLogger(__name__)

RESERVED = ("task", "max_turns", "evaluator", "log_dir")

Pending = tuple[Budget, str, int, list[dict[str, Any]]]
"""A trajectory to run: its budget, task, index and its logged records of turns 1..k (empty: none)."""


@dataclass(kw_only=True)
class RolloutConfig:
    """How `evaluate` runs (the tasks, configurations and policy are its arguments)."""

    env: dict[str, Any] = field(default_factory=dict)
    """`gym.make("KernelRefine-v0", ...)` keywords (device, checks, score, preset, ...); not task or max_turns."""
    workers: int = 2
    """Sandbox workers of the evaluator `evaluate` creates (when none is passed)."""
    concurrency: int = 64
    """Trajectories live at once: the policy's batch per round."""
    seed: int = 0
    """Base of every trajectory's env seed and every request's sampling seed."""
    system_prompt: str | None = None
    """A system message that chat policies put before each prompt."""
    log_prompts: bool = True
    """Log each turn's prompt (needed by `kernel-gym samples`; the observations dominate the log's size)."""
    progress: bool = False
    """Show a progress bar (tqdm when installed) on stderr."""
    schedule: str = "auto"
    """"rounds": every live trajectory's request in one batched `generate` call, then their steps (a local model);
    "async": each trajectory on its own thread, one request at a time (a server); "auto": rounds when the policy
    says `batched`, else async."""

    def __post_init__(self) -> None:
        clash = sorted(set(self.env) & set(RESERVED))
        if clash:
            raise ConfigError(f"env keywords {clash} are set by the rollout itself (tasks and configurations)")
        if self.concurrency < 1 or self.workers < 1:
            raise ConfigError("concurrency and workers must be >= 1")
        if self.schedule not in ("auto", "rounds", "async"):
            raise ConfigError(f"schedule must be 'auto', 'rounds' or 'async', got {self.schedule!r}")


@dataclass
class RolloutResult:
    """The trajectories of the requested tasks and configurations (run now or found complete in the log)."""

    trajectories: list[Trajectory]
    budgets: list[Budget]
    tasks: list[str]
    out: Path | None
    ran: int
    """Trajectories run by this call."""
    skipped: int
    """Trajectories found complete in the log and not run again."""
    resumed: int = 0
    """Of those run, the trajectories continued from their last logged turn (their logged turns not asked again)."""

    def metrics(self, **kwargs: Any) -> dict[str, ConfigMetrics]:
        """`kernel_gym.metrics.summarize` over these trajectories (complete ones), by configuration."""
        return summarize(self.trajectories, **kwargs)

    def table(self) -> str:
        from kernel_gym.report import summary_table

        return summary_table(self.metrics())


def evaluate(policy: Policy | str, tasks: str | Sequence[str], configs: str | Sequence[Any] = DEFAULT_CONFIGS, *,
             out: str | Path | None = None, evaluator: Any = None, **settings: Any) -> RolloutResult:
    """Run every configuration "KxT" on every task and return the trajectories (with metrics one call away).

    `policy`: a Policy or a spec (`replay:FILE`, `scripted:...`, `openai:URL`, `hf:MODEL`). `tasks`: ids, suites
    or paths (see `resolve_tasks`). `configs`: "128x1,32x4,16x8" or a list. `out`: a folder for the JSONL log and
    run.json; re-running with the same folder skips the trajectories already complete there. `evaluator`: a shared
    evaluator (e.g. a LocalEvaluator already started); by default one with `workers` workers is made and closed.
    `settings`: the fields of RolloutConfig (env, workers, concurrency, seed, system_prompt, log_prompts, progress,
    schedule).
    """
    cfg = RolloutConfig(**settings)
    budgets, task_ids = parse_budgets(configs), resolve_tasks(tasks)
    if unequal_budgets(budgets):
        logger.warning(unequal_budgets(budgets))
    own_policy = not isinstance(policy, Policy)
    policy = make_policy(policy)
    device = _device(cfg.env.get("device", "auto"), evaluator)
    env_kwargs = {**cfg.env, "device": device}
    _check_env(env_kwargs)
    writer, done, partial = _open_log(out, env_kwargs, cfg, policy)
    wanted = [(b, t, i) for b in budgets for t in task_ids for i in range(b.trajectories)]
    pending = [(b, t, i, partial.get((b.label, t, i), [])) for b, t, i in wanted if (b.label, t, i) not in done]
    own = evaluator is None and bool(pending)  # nothing to run: no workers to start
    records: list[dict[str, Any]] = []
    resumed = 0
    try:
        if own:
            from kernel_gym.judge.local import LocalEvaluator

            evaluator = LocalEvaluator(device, workers=cfg.workers)
            evaluator.start()
        resumed = _run(policy, pending, env_kwargs, evaluator, cfg, writer, records)
    finally:
        if writer is not None:
            writer.close()
        if own and evaluator is not None:
            evaluator.close()
        if own_policy:
            policy.close()
    source = rlog.log_path(out) if out is not None else records
    keys = {(b.label, t, i) for b, t, i in wanted}
    trajs = [t for t in rlog.trajectories(source) if (t.config, t.task, t.index) in keys]
    return RolloutResult(trajs, budgets, task_ids, Path(out) if out is not None else None, ran=len(pending),
                         skipped=len(wanted) - len(pending), resumed=resumed)


class _Live:
    """One running trajectory: its env, the observation to answer, its turn. With `logged` (its records of turns
    1..k from an earlier run) it goes on at turn k+1: the env is restored from them, nothing is asked again."""

    def __init__(self, budget: Budget, task: str, index: int, logged: list[dict[str, Any]],
                 env_kwargs: dict[str, Any], evaluator: Any, seed: int):
        import gymnasium as gym

        import kernel_gym  # noqa: F401 - registers the env id

        self.budget, self.task, self.index, self.seed = budget, task, index, _seed(seed, budget.label, task, index)
        self.env = gym.make("KernelRefine-v0", task=task, max_turns=budget.turns, evaluator=evaluator, **env_kwargs)
        self.obs, info = self.env.reset(seed=self.seed, options={"task": task})
        self.episode_id, self.turn, self.done, self.restored = info["episode_id"], 0, False, False
        if logged:
            self._restore(logged)

    def _restore(self, logged: list[dict[str, Any]]) -> None:
        episode_id = str(logged[0].get("episode_id") or self.episode_id)
        try:
            self.obs = self.env.unwrapped.restore([(r["action"], r["info"]) for r in logged], episode_id=episode_id)
        except (ConfigError, KeyError, TypeError, ValueError) as e:  # a log this version cannot read back
            logger.warning("%s/%s/%d: cannot continue from the log (%s); running it again from turn 1",
                           self.budget.label, self.task, self.index, e)
            self.obs, info = self.env.reset(seed=self.seed, options={"task": self.task})
            self.episode_id = info["episode_id"]
            return
        self.episode_id, self.turn, self.restored = episode_id, len(logged), True

    def request(self, system_prompt: str | None) -> Request:
        return Request(prompt=self.obs, task=self.task, turn=self.turn + 1, trajectory=self.index,
                       config=self.budget.label, seed=(self.seed + self.turn + 1) % 2**31, system_prompt=system_prompt)

    def step(self, response: str, policy_name: str, log_prompt: bool) -> dict[str, Any]:
        prompt = self.obs
        self.obs, reward, _, truncated, info = self.env.step(response)
        self.turn, self.done = info["turn"], bool(truncated)
        record = {"config": self.budget.label, "task": self.task, "trajectory": self.index, "turn": info["turn"],
                  "turns": self.budget.turns, "episode_id": self.episode_id, "seed": self.seed, "policy": policy_name,
                  "action": response, "not_okay": not_okay_reason(response), "info": info, "reward": reward,
                  "gamma": self.env.unwrapped.config.gamma, "aggregation": self.env.unwrapped.config.aggregation,
                  "time": time.time()}
        if log_prompt:
            record["prompt"] = prompt
        return record

    def close(self) -> None:
        self.env.close()


class _Sink:
    """Where step records go (the log, or a list), and the progress bar; safe to call from several threads."""

    def __init__(self, writer: Any, records: list[dict[str, Any]], bar: Any):
        self.writer, self.records, self.bar, self._lock = writer, records, bar, threading.Lock()
        self.resumed = 0  # trajectories continued from their logged turns

    def opened(self, slot: _Live) -> _Live:
        with self._lock:
            self.resumed += slot.restored
        return slot

    def __call__(self, record: dict[str, Any]) -> None:
        with self._lock:
            if self.writer is None:
                self.records.append(record)
            else:
                self.writer.write(record)
            self.bar.update(1)


def _run(policy: Policy, pending: list[Pending], env_kwargs: dict[str, Any], evaluator: Any,
         cfg: RolloutConfig, writer: Any, records: list[dict[str, Any]]) -> int:
    """Run the pending trajectories; returns how many went on from their logged turns."""
    schedule = cfg.schedule if cfg.schedule != "auto" else ("rounds" if policy.batched else "async")
    with progress_bar(sum(b.turns - len(logged) for b, _, _, logged in pending), enabled=cfg.progress) as bar:
        sink = _Sink(writer, records, bar)
        if schedule == "rounds":
            _run_rounds(policy, pending, env_kwargs, evaluator, cfg, sink)
        else:
            _run_async(policy, pending, env_kwargs, evaluator, cfg, sink)
    return sink.resumed


def _answer(policy: Policy, slots: list[_Live], system_prompt: str | None) -> list[str]:
    responses = policy.generate([slot.request(system_prompt) for slot in slots])
    if len(responses) != len(slots):
        raise PolicyError(f"{policy.name} returned {len(responses)} responses for {len(slots)} requests")
    return [as_text(r) for r in responses]


def _run_rounds(policy: Policy, pending: list[Pending], env_kwargs: dict[str, Any], evaluator: Any,
                cfg: RolloutConfig, sink: _Sink) -> None:
    """Lockstep rounds: one batched generate call for every live trajectory, then their steps in parallel."""
    threads = max(1, int(getattr(evaluator, "workers", cfg.concurrency)))
    queue, live = list(reversed(pending)), []
    with ThreadPoolExecutor(max_workers=threads) as steppers:
        try:
            while queue or live:
                while queue and len(live) < cfg.concurrency:
                    live.append(sink.opened(_Live(*queue.pop(), env_kwargs, evaluator, cfg.seed)))
                responses = _answer(policy, live, cfg.system_prompt)
                steps = [steppers.submit(s.step, r, policy.name, cfg.log_prompts) for s, r in zip(live, responses)]
                for step in steps:  # (in order, each as soon as it and those before it are done)
                    _waited([step])
                    sink(step.result())
                for slot in [s for s in live if s.done]:
                    slot.close()
                live = [s for s in live if not s.done]
        finally:
            for slot in live:
                slot.close()


def _run_async(policy: Policy, pending: list[Pending], env_kwargs: dict[str, Any], evaluator: Any,
               cfg: RolloutConfig, sink: _Sink) -> None:
    """Every trajectory on its own thread (`concurrency` at once): generate one response, step, repeat. No
    trajectory waits for the slowest completion of a batch; the evaluator's pool queues the steps."""
    stop = threading.Event()

    def trajectory(item: Pending) -> None:
        if stop.is_set():
            return
        slot = sink.opened(_Live(*item, env_kwargs, evaluator, cfg.seed))
        try:
            while not slot.done and not stop.is_set():
                (response,) = _answer(policy, [slot], cfg.system_prompt)
                sink(slot.step(response, policy.name, cfg.log_prompts))
        finally:
            slot.close()

    with ThreadPoolExecutor(max_workers=cfg.concurrency) as pool:
        futures = [pool.submit(trajectory, item) for item in pending]
        try:
            _waited(futures, first_exception=True)
        finally:
            stop.set()  # after a failure, the others stop after their current step
        _waited(futures)
        for future in futures:
            future.result()


def _waited(futures: list[Future], first_exception: bool = False) -> None:
    """Until every future is done (or, with `first_exception`, one raised), waking twice a second. CPython runs a
    signal's handler only in the main thread, between bytecodes; a signal the kernel hands to another thread (it
    may: any thread that does not block it) does not interrupt the main thread's blocking wait, so Ctrl-C
    (`kernel-gym rollout`'s handler ends the process at once) would wait for every step in flight (~100 s
    measured)."""
    while True:
        done, running = wait(futures, timeout=0.5, return_when=FIRST_EXCEPTION if first_exception else ALL_COMPLETED)
        if not running or (first_exception and any(not f.cancelled() and f.exception() for f in done)):
            return


def _open_log(out: str | Path | None, env_kwargs: dict[str, Any], cfg: RolloutConfig, policy: Policy):
    """(writer, keys complete in the log, logged turns of the incomplete ones) for `out`; run.json must agree on
    the env settings."""
    if out is None:
        return None, set(), {}
    from kernel_gym.trajectory import TrajectoryLog

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    env_json = _jsonable(env_kwargs)
    run = rlog.read_run(folder)
    if run is not None and run.get("env") != env_json:
        raise ConfigError(f"{folder} holds a rollout with other env settings ({run.get('env')}; now {env_json}): "
                          "use another --out folder to compare settings")
    if run is not None and run.get("policy") != policy.name:
        logger.warning("%s was written by policy %s; continuing it with %s", folder, run.get("policy"), policy.name)
    settings = {k: v for k, v in asdict(cfg).items() if k not in ("env", "progress")}
    rlog.write_run(folder, {"env": env_json, "policy": policy.name, "settings": settings,
                            "started": (run or {}).get("started", time.time()), "updated": time.time()})
    records = rlog.read_records(folder)
    done, partial = rlog.completed_keys(records), rlog.partial_episodes(records)
    rlog.end_cut_line(rlog.log_path(folder))
    return TrajectoryLog(folder, name=rlog.LOG_NAME), done, partial


def _check_env(env_kwargs: dict[str, Any]) -> None:
    """Fail before anything runs on an env setting the env would reject (an unknown preset, score, checks, ...)."""
    import dataclasses

    from kernel_gym.config import EnvConfig, make_config

    fields = {f.name for f in dataclasses.fields(EnvConfig)}
    make_config(env_kwargs.get("preset"), **{k: v for k, v in env_kwargs.items() if k in fields})


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=repr, sort_keys=True))


def _device(device: str, evaluator: Any) -> str:
    from kernel_gym.device import local_device

    if device == "auto" and evaluator is not None and getattr(evaluator, "device", None) in ("cpu", "cuda"):
        return evaluator.device
    if evaluator is None or device == "auto":
        return local_device(device)  # a pool on this machine: "cuda" without a GPU is refused before anything runs
    return device


def _seed(base: int, config: str, task: str, index: int) -> int:
    digest = hashlib.blake2b(f"{base}/{config}/{task}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % 2**31
