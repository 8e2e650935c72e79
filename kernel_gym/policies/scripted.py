"""Scripted policies: responses from Python (a callable, a list by turn, a dict by task) or a folder of solutions."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernel_gym.errors import ConfigError
from kernel_gym.policies.base import Policy, PolicyError, Request, as_text, register_policy

DEFAULT_NAMES = ("policy", "script", "respond", "RESPONSES")
"""Names a `scripted:FILE.py` spec looks up, in order, when it names none."""


class ScriptedPolicy(Policy):
    """Answers from a script, deterministically.

    The script is one of:
    - a callable `f(request: Request) -> str`, called once per request (it may use `request.seed`, `.turn`, ...);
    - a list of responses: turn t gets `script[t - 1]`, and the last one repeats past the list's end;
    - a dict `{task id: script}`, each value itself a script; the key `"*"` serves every task not named.
    """

    def __init__(self, script: Any, name: str = "scripted"):
        _check(script)
        self.script, self.name = script, name

    def generate(self, requests: Sequence[Request]) -> list[str]:
        return [as_text(_answer(self.script, r)) for r in requests]

    @classmethod
    def from_folder(cls, folder: str | Path, reasoning: str = "Here is a kernel for this task.") -> ScriptedPolicy:
        """Answer each task with its solution file: `level1/relu` -> `FOLDER/level1_relu.py` (or `level1/relu.py`).

        The file's text is the response when it has a fenced block; otherwise it is wrapped in one after `reasoning`.
        """
        root = Path(folder)
        if not root.is_dir():
            raise ConfigError(f"no such folder of solutions: {root}")

        def respond(request: Request) -> str:
            for candidate in (root / (request.task.replace("/", "_") + ".py"), root / (request.task + ".py")):
                if candidate.is_file():
                    text = candidate.read_text(errors="replace")
                    return text if "```" in text else f"{reasoning}\n\n```python\n{text.rstrip()}\n```\n"
            raise PolicyError(f"the folder {root} has no solution for task {request.task!r}")

        return cls(respond, name=f"scripted:{root}")


def _check(script: Any) -> None:
    if callable(script) or isinstance(script, str):
        return
    if isinstance(script, Mapping):
        for value in script.values():
            _check(value)
        return
    if isinstance(script, Sequence) and len(script) > 0:
        return
    raise ConfigError(f"a script is a callable, a non-empty list of responses or a dict by task; got {type(script).__name__}")


def _answer(script: Any, request: Request) -> Any:
    if isinstance(script, str):
        return script
    if isinstance(script, Mapping):
        if request.task in script:
            return _answer(script[request.task], request)
        if "*" in script:
            return _answer(script["*"], request)
        raise PolicyError(f"the script has no entry for task {request.task!r} (and no '*')")
    if callable(script):
        return script(request)
    return _answer(script[min(request.turn, len(script)) - 1], request)


@register_policy("scripted")
def _from_spec(arg: str, **options: Any) -> Policy:
    """`scripted:demo` (the demo's three turns), `scripted:DIR` (solution files by task, see `from_folder`),
    `scripted:FILE.py[:NAME]` or `scripted:package.module:NAME` (a callable, list, dict or Policy there; without NAME
    the first of `policy`, `script`, `respond`, `RESPONSES`)."""
    if options:
        raise ConfigError(f"a scripted policy takes no options; got {sorted(options)}")
    if arg == "demo":
        from kernel_gym.demo import RESPONSES

        return ScriptedPolicy(list(RESPONSES), name="scripted:demo")
    if Path(arg).is_dir():
        return ScriptedPolicy.from_folder(arg)
    target, name = _split(arg)
    module = _load_module(target)
    names = (name,) if name else DEFAULT_NAMES
    for attr in names:
        if hasattr(module, attr):
            obj = getattr(module, attr)
            return obj if isinstance(obj, Policy) else ScriptedPolicy(obj, name=f"scripted:{arg}")
    raise ConfigError(f"{target} defines none of {', '.join(names)}")


def _split(arg: str) -> tuple[str, str]:
    target, sep, name = arg.rpartition(":")
    if sep and name.isidentifier():
        return target, name
    return arg, ""


def _load_module(target: str) -> Any:
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ConfigError(f"no such script file: {path}")
        spec = importlib.util.spec_from_file_location(f"kernel_gym_script_{abs(hash(str(path.resolve())))}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(target)
    except ImportError as e:
        raise ConfigError(f"cannot import the script module {target!r}: {e}") from e

