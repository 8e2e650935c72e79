"""What the judge and the runners both run: launch counting and the op audit (launches, op_audit), the profiler's
share (profile), the compile phases a runner tells the judge (phases), CUDA helpers (cuda), the harness's own
integrity snapshot (integrity), timers and the launch gate's streams (timing), and how a failure is labelled (errors).
"""
