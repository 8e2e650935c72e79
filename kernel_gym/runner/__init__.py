"""Untrusted runners: processes that import a candidate (or the task's reference), call it on the judge's shared
tensors and report evidence. See kernel_gym/judge for the trusted side."""
