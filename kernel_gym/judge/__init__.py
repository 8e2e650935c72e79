"""The trusted judge: owns the reference, the secret inputs, the comparison, the clock and the verdict, and never
imports candidate code. Candidate and reference code run in runner processes (kernel_gym.runner)."""
