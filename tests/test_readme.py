"""README.md's two commands are what CI runs: .ci/run holds each of them verbatim, as a line of its own."""

import re

import pytest


def readme_commands(root) -> list[str]:
    """The shell commands of the README's "Two commands" section, in order (one fenced bash block each)."""
    text = (root / "README.md").read_text()
    section = re.search(r"^## Two commands\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Two commands' section"
    blocks = re.findall(r"```bash\n(.*?)```", section.group(1), re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_has_two_commands_install_then_test(repo_root):
    commands = readme_commands(repo_root)
    assert len(commands) == 2, commands
    install, test = commands
    assert "scripts/install.sh" in install and install.endswith("kernel-gym demo")
    assert test == ".venv/bin/python -m pytest -q"


@pytest.mark.parametrize("which", [0, 1])
def test_ci_runs_the_readme_commands_verbatim(repo_root, which):
    ci_lines = [line.strip() for line in (repo_root / ".ci" / "run").read_text().splitlines()]
    assert readme_commands(repo_root)[which] in ci_lines


def test_ci_sets_only_environment_variables_besides(repo_root):
    """Every other line of .ci/run: a comment, shell setup, an `export`, the lint, or the contract smoke test."""
    commands = set(readme_commands(repo_root))
    allowed = ("#", "set -", "cd ", "export ", ".venv/bin/ruff check", "if [ -f ../shared/", "PATH=", "grep -q",
               "fi")
    for line in (repo_root / ".ci" / "run").read_text().splitlines():
        line = line.strip()
        assert not line or line in commands or line.startswith(allowed), f".ci/run line not from the README: {line}"


def test_install_script_time_and_contents_are_stated(repo_root):
    text = (repo_root / "README.md").read_text()
    assert re.search(r"about \d+ minutes? on a fresh machine", text)
    script = (repo_root / "scripts" / "install.sh").read_text()
    assert '-e ".[dev]"' in script and "--no-deps" in script  # every optional package: ray, serve, OpenRLHF


def test_notebooks_can_be_opened_after_the_install(repo_root):
    import tomllib

    extras = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("jupyterlab") for d in extras["notebooks"])
    assert any("notebooks" in d for d in extras["dev"] if d.startswith("kernel-gym["))  # [dev] brings JupyterLab
    assert ".venv/bin/jupyter lab notebooks/" in (repo_root / "README.md").read_text()
