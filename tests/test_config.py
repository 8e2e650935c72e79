"""EnvConfig: the evaluation settings it hands each step's job (EvalConfig) come from one derivation."""

import dataclasses

from kernel_gym.config import EVAL_FIELDS, EnvConfig
from kernel_gym.env import KernelRefineEnv
from kernel_gym.eval.job import EvalConfig
from kernel_gym.eval.result import EvalResult, Outcome

# Not a value of either config's default: each field below is seen to travel, not to fall back to EvalConfig's own.
CHANGED = {"checks": "strict", "correctness_trials": 5, "error_budget_k": 3.0, "timing_trials": 4,
           "timing_max_trials": 9, "launch_gate": False, "compile_timeout_s": 11.0, "run_timeout_s": 7.0,
           "precision": "bf16"}


def test_the_carried_fields_are_the_ones_both_configs_name():
    # a field both configs gain under one name joins EVAL_FIELDS by itself; this list makes that a visible change
    assert set(EVAL_FIELDS) == set(CHANGED)
    env_defaults = {f.name: f.default for f in dataclasses.fields(EnvConfig)}
    eval_defaults = {f.name: f.default for f in dataclasses.fields(EvalConfig)}
    assert {name: env_defaults[name] for name in EVAL_FIELDS} == {name: eval_defaults[name] for name in EVAL_FIELDS}


def test_eval_config_carries_every_field_and_takes_device_and_seed():
    config = EnvConfig(device="auto", **CHANGED).eval_config(device="cpu", seed=17)
    assert (config.device, config.seed) == ("cpu", 17)
    assert {name: getattr(config, name) for name in EVAL_FIELDS} == CHANGED


class Recorder:
    """An evaluator that keeps the jobs it is sent."""

    device = "cpu"

    def __init__(self):
        self.jobs = []

    def evaluate(self, job):
        self.jobs.append(job)
        return EvalResult(outcome=Outcome.MISMATCH, message="recorded")

    def close(self):
        pass


def test_a_step_sends_the_env_config_to_its_job(respond, solution):
    recorder = Recorder()
    env = KernelRefineEnv(evaluator=recorder, task="level1/relu", device="cpu", max_turns=1, **CHANGED)
    try:
        env.reset(seed=0)
        env.step(respond(solution("level1/relu")))
    finally:
        env.close()
    (job,) = recorder.jobs
    assert job.config.device == "cpu" and {name: getattr(job.config, name) for name in EVAL_FIELDS} == CHANGED
