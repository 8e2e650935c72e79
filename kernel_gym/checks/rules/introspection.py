"""Rule ``introspection``: no reaching outside the solution (frames, memory, files, env, processes)."""

from __future__ import annotations

import ast
import re

from .. import cpp
from ..context import Context
from ..registry import rule, violation

NAME = "introspection"
BANNED_MODULES = {
    "gc": "scans live objects (e.g. the expected outputs)", "inspect": "reads frames of the harness",
    "ctypes": "reaches raw memory and C functions", "importlib": "loads modules dynamically",
    "builtins": "reaches the interpreter's builtins", "threading": "runs work in the background",
    "_thread": "runs work in the background", "multiprocessing": "starts processes",
    "concurrent": "runs work in the background", "asyncio": "runs work in the background",
    "subprocess": "runs programs", "signal": "interferes with the harness's signals",
    "socket": "opens network connections", "pickle": "loads arbitrary objects", "marshal": "loads code",
    "dill": "loads arbitrary objects", "shutil": "touches files", "pathlib": "reads files",
    "tracemalloc": "scans memory", "traceback": "reads frames of the harness", "dis": "inspects code",
    "code": "runs code", "runpy": "runs modules", "pdb": "reads frames", "atexit": "runs code at exit",
    "faulthandler": "touches the process", "resource": "changes process limits",
    "psutil": "inspects processes", "mmap": "maps memory or files", "fcntl": "touches file descriptors",
    "pty": "starts programs", "select": "watches file descriptors", "urllib": "opens network connections",
    "http": "opens network connections", "requests": "opens network connections", "io": "opens files",
}
OS_OK = ("os.path", "os.cpu_count", "os.sep", "os.getcwd", "os.makedirs", "os.linesep", "os.getpid")
SYS_OK = ("sys.version", "sys.version_info", "sys.platform", "sys.maxsize", "sys.float_info",
          "sys.byteorder", "sys.int_info", "sys.getrecursionlimit")
BUILTINS = {"eval": "evaluates code", "exec": "runs code", "compile": "compiles Python code",
            "__import__": "imports dynamically", "open": "opens files", "globals": "reaches module globals",
            "vars": "reaches object namespaces", "locals": "reads frame locals", "breakpoint": "stops",
            "exit": "ends the process", "quit": "ends the process", "input": "reads stdin"}
DUNDERS = {"__globals__", "__code__", "__closure__", "__builtins__", "__subclasses__", "__mro__",
           "__bases__", "__base__", "f_back", "f_locals", "f_globals", "f_code", "f_builtins", "tb_frame",
           "gi_frame", "cr_frame", "ag_frame", "__dict__", "__loader__", "__spec__", "_getframe",
           "_current_frames", "settrace", "setprofile", "tb_next", "__self__", "__func__", "cell_contents"}
# A module reached as an attribute of another (`torch.sys`, `np.os`) is the real module: same rule as importing it.
MODULE_ATTRS = {"sys", "os", "gc", "inspect", "ctypes", "importlib", "builtins", "subprocess", "threading",
                "_thread", "multiprocessing", "signal", "socket", "pickle", "marshal", "traceback", "posix"}
CPP_BANNED = re.compile(r"\b(?:std::)?(?:getenv|setenv|putenv|dlopen|dlsym|mprotect|ptrace|system|popen|fork|"
                        r"execv\w*|execl\w*|kill|raise|_exit|quick_exit|fopen|freopen|remove|unlink|dup2|"
                        r"pthread_kill)\s*\(|\bexit\s*\(\s*(?:0|EXIT_SUCCESS)\s*\)")
FIX = "A solution may only compute its outputs from its inputs and parameters; remove it."


def _obfuscated(name: ast.expr) -> bool:
    """An attribute name built at run time from string pieces: concatenation, f-strings, join/format/replace,
    or a slice of a literal (`"sysx"[:3]`). `str(x.dtype).split(".")[-1]` (dtype lookup) is not."""
    if isinstance(name, (ast.BinOp, ast.JoinedStr)):
        return True
    if isinstance(name, ast.Call) and isinstance(name.func, ast.Attribute) and name.func.attr in (
            "join", "format", "replace", "lower", "upper", "strip", "lstrip", "rstrip", "decode", "swapcase"):
        return True
    return isinstance(name, ast.Subscript) and isinstance(name.value, ast.Constant) and isinstance(name.value.value, str)


def _defined_names(ctx: Context) -> set[str]:
    out = set(ctx.functions) | set(ctx.classes) | set(ctx.jit)
    for n in ast.walk(ctx.tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
    return out


@rule(NAME)
def check(ctx: Context):
    """No reaching outside the solution: no import of gc, inspect, ctypes, importlib, builtins,
    threading, multiprocessing, subprocess, signal, socket, pickle, pathlib... ; no ``os.environ``/
    ``os.getenv``/``os._exit``/``os.kill``/``os.system`` (only ``os.path``-style helpers);
    no ``sys._getframe``/``sys.modules``/``sys.exit``/``sys.stdout`` (only version/platform queries);
    no ``eval``/``exec``/``compile``/``__import__``/``open``/``globals``/``vars``; no frame or
    code internals (``__globals__``, ``f_back``, ``__dict__`` ...); no ``getattr`` of such names; and in
    C++ sources no getenv/dlsym/mprotect/system/fork/kill/fopen or ``exit(0)``."""
    defined = _defined_names(ctx)
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Attribute) and node.attr in MODULE_ATTRS:
            yield violation(NAME, node, f"`{ast.unparse(node)}` is the `{node.attr}` module reached through "
                            f"another module. {FIX}")
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in MODULE_ATTRS:
                    yield violation(NAME, node, f"`from {node.module} import {alias.name}` is the `{alias.name}` "
                                    f"module reached through another module. {FIX}")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for mod in mods:
                why = BANNED_MODULES.get(mod.split(".")[0])
                if why:
                    yield violation(NAME, node, f"importing `{mod}` ({why}) is not allowed. {FIX}")
        elif isinstance(node, (ast.Attribute, ast.Name)) and not (
                isinstance(ctx.parents.get(node), ast.Attribute) and ctx.parents[node].value is node):
            r = ctx.resolve(node) or ""
            if (r.startswith("os.") and not r.startswith(OS_OK)) or (r.startswith("sys.") and not r.startswith(SYS_OK)):
                yield violation(NAME, node, f"`{r}` reaches the process, its environment or the "
                                f"interpreter. {FIX}")
            elif r.startswith("torch._C") and not r.startswith("torch._C._get"):
                yield violation(NAME, node, f"`{r}` reaches torch internals. {FIX}")
            if isinstance(node, ast.Attribute) and node.attr in DUNDERS and not (
                    node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id == "self"):
                yield violation(NAME, node, f"`{ast.unparse(node)}` reaches interpreter internals. {FIX}")
            if isinstance(node, ast.Name) and node.id in ("__builtins__", "__loader__", "__spec__"):
                yield violation(NAME, node, f"`{node.id}` reaches the interpreter. {FIX}")
        elif isinstance(node, ast.Raise) and node.exc is not None and any(
                isinstance(n, ast.Name) and n.id in ("SystemExit", "KeyboardInterrupt") for n in ast.walk(node.exc)):
            yield violation(NAME, node, f"`{ast.unparse(node)}` ends the process early. {FIX}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in BUILTINS and name not in defined and name not in ctx.names.aliases:
                yield violation(NAME, node, f"the builtin `{name}()` {BUILTINS[name]}. {FIX}")
            if name in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 and _obfuscated(node.args[1]):
                yield violation(NAME, node, f"`{name}` with a computed attribute name hides what it reaches. {FIX}")
            if name in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 and \
                    isinstance(node.args[1], ast.Constant) and (node.args[1].value in DUNDERS
                                                                or node.args[1].value in MODULE_ATTRS):
                yield violation(NAME, node, f"`{name}(..., {node.args[1].value!r})` reaches interpreter "
                                f"internals. {FIX}")
        if isinstance(node, ast.Call) and (ctx.resolve(node.func) or "").endswith(("attrgetter", "methodcaller")):
            yield violation(NAME, node, f"`{ast.unparse(node.func)}` reaches attributes by name. {FIX}")
    for text, first in ctx.cpp:
        for hit, line in cpp.search(CPP_BANNED, text, first):
            yield violation(NAME, line, f"`{hit.strip()}` in the C++ source reaches the process, files "
                            f"or the environment. {FIX}")
