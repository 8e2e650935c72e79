"""Sandbox plumbing of the judge and its runners: the channel, shared memory, process limits and confinement.
The pool of judge slots is kernel_gym.judge.pool."""
