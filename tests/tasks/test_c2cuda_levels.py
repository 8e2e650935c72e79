"""C→CUDA tasks carry a KernelBench-style level (the header's `level`): in the Task, the manifest and the
`length_shaped` difficulty, without changing the generated program or joining the levelN suites."""

import pytest

from kernel_gym.errors import TaskFormatError, UnknownNameError
from kernel_gym.rewards import get_score, task_difficulty
from kernel_gym.rewards.scores import TurnSignals
from kernel_gym.tasks import list_tasks, load_task, tasks_dir
from kernel_gym.tasks.c_task import parse_c, program
from kernel_gym.tasks.manifest import read_manifest

C_TASKS = list_tasks(suite="c2cuda")
SAXPY = (tasks_dir() / "c2cuda" / "saxpy.c").read_text()


@pytest.mark.parametrize("task_id", C_TASKS)
def test_every_c2cuda_task_has_a_level_in_the_manifest(task_id):
    task = load_task(task_id)
    assert task.level in (1, 2, 3), task_id
    assert read_manifest()["tasks"][task_id]["level"] == task.level
    assert task_difficulty(task.metadata, task.level) == task.level


def test_levels_span_the_scale():
    levels = {t: load_task(t).level for t in C_TASKS}
    assert levels["c2cuda/saxpy"] == 1 and levels["c2cuda/matmul"] == 2 and levels["c2cuda/spmv_csr"] == 3


def test_length_shaped_penalty_scales_with_a_c_tasks_level():
    task = load_task("c2cuda/spmv_csr")
    difficulty = task_difficulty(task.metadata, task.level)
    assert difficulty == 3.0
    score = get_score({"name": "length_shaped", "lam": 0.05, "ref_chars": 4000})
    turn = dict(format_ok=True, compiled=True, correct=True, speedup=2.0, response_chars=4000)
    easy, hard = TurnSignals(**turn, difficulty=1.0), TurnSignals(**turn, difficulty=difficulty)
    assert score.terms(hard)["length_penalty"] == pytest.approx(3 * score.terms(easy)["length_penalty"])


def test_level_is_not_part_of_the_program_and_selects_no_suite():
    with_level, without = parse_c(SAXPY, "saxpy"), parse_c(SAXPY.replace("level = 1\n", ""), "saxpy")
    assert with_level.meta["level"] == 1 and "level" not in without.meta
    assert program(with_level) == program(without), "the manifest's source_sha256 must not depend on the level"
    for suite in ("level1", "level2", "level3"):
        assert not any(t.startswith("c2cuda/") for t in list_tasks(suite))
    with pytest.raises(UnknownNameError):  # a level is no suite of its own
        list_tasks("level4")


@pytest.mark.parametrize("bad", ['"easy"', "0", "true", "1.5"])
def test_a_bad_level_is_rejected(bad):
    with pytest.raises(TaskFormatError, match="level"):
        parse_c(SAXPY.replace("level = 1\n", f"level = {bad}\n"), "saxpy")
