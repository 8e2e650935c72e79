"""The fence contract, one rule for env.step, `kernel-gym eval` and `kernel-gym lint`: a response's code is its last
fenced block (bare code in a response is a format error); a `.py` file given to eval or lint is code by definition."""

from __future__ import annotations

import json

import pytest

from kernel_gym.actions import parse_action
from kernel_gym.cli import main
from kernel_gym.solution_file import as_response, fence, is_code

DOC_WITH_FENCE = '''"""A ReLU in Triton. Usage, as a model would show it:

```python
y = ModelNew()(x)
```
"""
'''


def test_fence_cannot_be_closed_by_the_code():
    code = DOC_WITH_FENCE + "class ModelNew:\n    pass\n"
    parsed = parse_action(fence(code))
    assert parsed.ok and parsed.code.strip() == code.strip()
    assert fence("class ModelNew: pass").startswith("```python\n")
    assert fence("````\nclass ModelNew: pass").startswith("`````python\n")
    assert is_code("a.py") and not is_code("a.md") and not is_code("a.txt")
    assert is_code("a.txt", "code") and not is_code("a.py", "response")
    assert as_response("x", "a.md") == "x"
    with pytest.raises(ValueError, match="solution format"):
        is_code("a.py", "python")


def test_bare_code_in_a_response_is_a_format_error_that_says_so(make_env, relu_code):
    env = make_env(max_turns=2)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(relu_code())
    assert info["error"] == "format_error" and reward == 0.0
    assert "bare Python code" in info["feedback"] and "```python" in info["feedback"]
    _, _, _, _, info = env.step(fence(relu_code()))
    assert info["correct"] is True


@pytest.mark.timeout(300)
def test_eval_reads_a_py_file_as_code_and_any_other_file_as_a_response(tmp_path, relu_code, capsys):
    """A .py file whose docstring shows a ``` block was read as a response before (its last fenced block, the
    docstring's example, became the code); now it is code. The same text as .txt is a response: a format error, as
    env.step says."""
    code = DOC_WITH_FENCE + relu_code()
    py, txt = tmp_path / "solution.py", tmp_path / "response.txt"
    py.write_text(code)
    txt.write_text(code)
    base = ["eval", "--task", "level1/relu", "--device", "cpu", "--json", "--solution"]
    assert main([*base, str(py)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["correct"] is True, info["feedback"]
    assert main([*base, str(txt)]) == 0
    info = json.loads(capsys.readouterr().out)  # the docstring's example is the response's last fenced block
    assert info["error"] == "format_error" and parse_action(code).error in info["feedback"]
    assert main([*base, str(txt), "--solution-format", "code"]) == 0
    assert json.loads(capsys.readouterr().out)["correct"] is True


def test_lint_reads_files_as_eval_does(tmp_path, relu_code, capsys):
    code = DOC_WITH_FENCE + relu_code()
    py, md = tmp_path / "solution.py", tmp_path / "response.md"
    py.write_text(code)
    md.write_text(relu_code())  # bare code as a response
    base = ["lint", "--task", "level1/relu", "--json", "--solution"]
    assert main([*base, str(py)]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["ok"] is True and verdict["error"] is None and verdict["backend"] == "triton"
    assert main([*base, str(md)]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["ok"] is False and "bare Python code" in verdict["error"]
