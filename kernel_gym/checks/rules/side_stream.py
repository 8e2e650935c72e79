"""Rule ``side_stream``: kernels run on the current stream, in the calling thread."""

from __future__ import annotations

import ast
import re

from .. import cpp
from ..context import Context
from ..registry import rule, violation

NAME = "side_stream"
PY_STREAMS = ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
              "torch.cuda.StreamContext", "torch.cuda.streams", "torch.Stream", "torch.cuda.use_mem_pool",
              "torch.cuda.graphs.graph_pool_handle", "torch.stream", "torch.accelerator.set_stream",
              "cupy.cuda.Stream", "cupy.cuda.ExternalStream", "cupy.cuda.stream", "cuda.bindings.runtime.cudaStream",
              "cuda.bindings.driver.cuStream", "cuda.cudart.cudaStream", "cuda.cuda.cuStream")
CPP_STREAMS = re.compile(r"\b(?:cudaStreamCreate\w*|getStreamFromPool|getStreamFromExternal|"
                         r"setCurrentCUDAStream|cudaStreamPerThread|cudaLaunchHostFunc|std::thread|"
                         r"std::async|pthread_create|cudaStreamAddCallback)\b")
FIX = ("Launch every kernel on the current stream (torch.cuda.current_stream()) and return only after "
       "the work is enqueued there; timing on the current stream must see all of it.")


@rule(NAME)
def check(ctx: Context):
    """No work outside the current CUDA stream or calling thread: no ``torch.cuda.Stream``/
    ``torch.cuda.stream(...)``/``set_stream``/``ExternalStream`` in Python; in C++ sources no
    ``cudaStreamCreate``, ``getStreamFromPool``, ``setCurrentCUDAStream``, ``cudaStreamPerThread``,
    host callbacks, ``std::thread``/``std::async``/``pthread_create``. (Python threads are covered by
    ``introspection``.) ``torch.cuda.current_stream()`` and ``at::cuda::getCurrentCUDAStream()`` are fine."""
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and not (
                isinstance(ctx.parents.get(node), ast.Attribute) and ctx.parents[node].value is node):
            r = ctx.resolve(node) or ""
            if r.startswith(PY_STREAMS):
                yield violation(NAME, node, f"`{r}` moves work to another CUDA stream. {FIX}")
    for text, first in ctx.cpp:
        for hit, line in cpp.search(CPP_STREAMS, text, first):
            yield violation(NAME, line, f"`{hit}` in the C++ source runs work off the current stream or "
                            f"thread. {FIX}")
