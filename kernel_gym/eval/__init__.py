"""The contract the env, the trainers and every evaluator share: a job (job.py), its result (result.py) and the
evaluator protocol with the one place the static rules run (evaluator.py). The judge lives in kernel_gym.judge, the
code judge and runners share in kernel_gym.harness."""
