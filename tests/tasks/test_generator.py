"""The held-out generator: reproducible per seed, valid programs, duplicates and degenerate programs rejected."""

import json
import random

import pytest

from kernel_gym.cli import main
from kernel_gym.tasks import blocks, generator, load_task
from kernel_gym.tasks import ops as oplib
from kernel_gym.tasks.generator import Collector, Program, generate, sample_program, suite_signatures, write_suite
from kernel_gym.tasks.validate import validate_source


def _files(folder):
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_same_seed_same_files_other_seed_other_files(tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        assert main(["tasks", "generate", "--n", "6", "--seed", str(seed), "--out", str(tmp_path / name)]) == 0
    a, b, c = (_files(tmp_path / n) for n in "abc")
    assert len(a) == 7 and a == b
    assert set(a) != set(c) and a["manifest.json"] != c["manifest.json"]
    manifest = json.loads(a["manifest.json"])
    assert manifest["seed"] == 0 and manifest["generator"] == "sampled" and manifest["accepted"] == 6
    signatures = [tuple(e["signature"]) for e in manifest["tasks"].values()]
    assert len(set(signatures)) == 6 and not set(signatures) & suite_signatures()
    for entry in manifest["tasks"].values():
        assert 3 <= len(entry["ops"]) <= 6 and entry["ops"][0] in oplib.MAINS
        assert entry["baseline_ms_source"] == "estimate" and entry["baseline_ms"] >= 0.1
        task = load_task(str(tmp_path / "a" / entry["file"]))
        assert task.level == 2 and set(task.metadata) >= {"cpu", "alt", "full_alt"}


def test_every_main_operator_yields_valid_programs():
    rng = random.Random(3)
    for name in oplib.MAINS:
        program = None
        while program is None:
            program = sample_program(rng, mains={name: oplib.MAINS[name]})
        verdict = validate_source(program.source)
        assert program.ops[0] == name
        assert verdict.ok or verdict.reason == "constant", (name, verdict.reason, verdict.detail)


def test_known_operator_sequences_are_rejected():
    first = generate(3, seed=5)
    known = {t.verdict.signature for t in first.tasks}
    again = generate(3, seed=5, existing=suite_signatures() | known)
    assert again.rejected["duplicate"] >= 3
    assert not known & {t.verdict.signature for t in again.tasks}


def test_duplicates_within_a_run_are_rejected():
    """gemm followed by ReLUs only has four distinct programs (2 to 5 ReLUs)."""
    relu = {"relu": oplib.FOLLOWERS["relu"]}
    result = generate(6, seed=0, existing=set(), mains={"gemm": oplib.MAINS["gemm"]}, followers=relu, max_attempts=60)
    assert len(result.tasks) == 4 and result.rejected["duplicate"] > 0
    assert sorted(len(t.program.ops) for t in result.tasks) == [3, 4, 5, 6]


def test_a_suite_task_sequence_is_rejected():
    """A program computing Linear, ReLU, constant multiply is level2/gemm_relu again, whatever its constants."""
    collector = Collector(suite_signatures(), validate_source)
    source = load_task("level2/gemm_relu").source.replace("scale = 1.5", "scale = 2.5")
    assert not collector.offer(Program(("gemm", "relu", "mul_const"), source), "000_gemm_relu_mul_const")
    assert collector.result.rejected["duplicate"] == 1 and not collector.result.tasks
    other = load_task("level2/gemm_relu").source.replace("torch.relu(x)", "torch.sigmoid(x)")
    assert collector.offer(Program(("gemm", "sigmoid", "mul_const"), other), "001_gemm_sigmoid_mul_const")


def _zero(ctx):
    return oplib.Piece("zero", ["x = x * 0.0"])


def _input_free(ctx):
    return oplib.Piece("input_free", [f"x = x.sum() * 0.0 + self.w{ctx.k}"],
                       [f"self.w{ctx.k} = nn.Parameter(torch.randn(7))"])


def _noisy(ctx):
    return oplib.Piece("noisy", ["x = x + torch.rand_like(x)"])


def _overflow(ctx):
    return oplib.Piece("overflow", ["x = torch.exp(x * 1000.0)"])


@pytest.mark.parametrize(("op", "reason"), [(_zero, "constant"), (_input_free, "ignores_input"),
                                            (_noisy, "nondeterministic"), (_overflow, "non_finite")])
def test_degenerate_operator_sets_are_rejected(op, reason):
    result = generate(2, seed=0, existing=set(), mains={"gemm": oplib.MAINS["gemm"]}, followers={"bad": op},
                      max_attempts=4)
    assert not result.tasks and result.rejected[reason] == 4


def test_too_fast_programs_are_rejected():
    result = generate(1, seed=0, existing=set(), min_ms=1e6, max_attempts=3)
    assert not result.tasks and result.rejected["too_fast"] == 3


def test_format_problems_are_rejected():
    assert validate_source("import torch\n").reason == "format"
    src = load_task("level1/relu").source.replace('"alt": {"batch_size": 23, "dim": 301}', '"alt": {"rows": 3}')
    assert validate_source(src).reason == "format"
    assert validate_source(load_task("level1/relu").source.replace("torch.relu(x)", "x.nope()")).reason == "error"


def test_fewer_than_requested_exits_one(tmp_path, capsys):
    assert main(["tasks", "generate", "--n", "2", "--seed", "0", "--out", str(tmp_path), "--min-ms", "1e9",
                 "--max-attempts", "2"]) == 1
    assert "too_fast 2" in capsys.readouterr().out
    assert json.loads((tmp_path / "manifest.json").read_text())["accepted"] == 0


def test_write_suite_is_deterministic(tmp_path):
    result = generate(2, seed=11)
    write_suite(result, tmp_path / "x", {"seed": 11})
    write_suite(result, tmp_path / "y", {"seed": 11})
    assert _files(tmp_path / "x") == _files(tmp_path / "y")


# ---- level 3: whole blocks (kernel_gym/tasks/blocks.py) ---------------------------------------------------------
def test_level3_blocks_are_reproducible_valid_and_sized_for_the_memory_bound(tmp_path):
    from kernel_gym.tasks.memory import MEMORY_BOUND_MIB

    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        args = ["tasks", "generate", "--level", "3", "--n", "3", "--seed", str(seed), "--out", str(tmp_path / name)]
        assert main(args) == 0
    a, b, c = (_files(tmp_path / n) for n in "abc")
    assert len(a) == 4 and a == b and a != c
    manifest = json.loads(a["manifest.json"])
    assert manifest["level"] == 3 and manifest["accepted"] == 3
    signatures = [tuple(e["signature"]) for e in manifest["tasks"].values()]
    assert len(set(signatures)) == 3 and not set(signatures) & suite_signatures()
    for entry in manifest["tasks"].values():
        assert entry["level"] == 3 and entry["dtype"] == "bfloat16" and entry["baseline_ms"] >= 0.1
        assert 0 < entry["peak_mib_estimate"] <= MEMORY_BOUND_MIB
        task = load_task(str(tmp_path / "a" / entry["file"]))
        assert task.level == 3 and task.dtype == "bfloat16" and set(task.metadata) >= {"cpu", "alt", "full_alt"}
        token, channel = entry["ops"][1:3]  # a block: its wiring, then a token mixer and a channel mixer
        assert token.split("_")[0] in ("mha", "gqa", "causal", "gated", "token") and channel in blocks._MLPS


def _block(wiring, norm, parts, **options):
    options = {"layer_scale": False, "final_norm": False, "preset": 0, **options}
    return blocks.Block(wiring, norm, tuple(parts), **options)


def _covering_blocks():
    """Every wiring, norm, token mixer, attention option and MLP at least once."""
    rng = random.Random(0)
    att = blocks.attention
    return [
        _block("pre", "rmsnorm", [att(rng, "causal", True, True, False), blocks.mlp(rng, "swiglu")], final_norm=True),
        _block("post", "layernorm", [att(rng, "full", False, False, True), blocks.mlp(rng, "gelu_mlp")],
               layer_scale=True),
        _block("sandwich", "rmsnorm", [att(rng, "window", True, False, True), blocks.mlp(rng, "geglu")], preset=1),
        _block("parallel", "layernorm", [att(rng, "window", False, True, False), blocks.mlp(rng, "relu2_mlp")],
               preset=2),
        _block("pre", "layernorm", [blocks.causal_conv(rng, gated=True), blocks.mlp(rng, "gelu_tanh_mlp"),
                                    blocks.token_mlp(rng), blocks.mlp(rng, "swiglu")], layer_scale=True),
        _block("post", "rmsnorm", [blocks.causal_conv(rng, gated=False), blocks.mlp(rng, "gelu_mlp")]),
    ]


@pytest.mark.parametrize("index", range(6))
def test_every_wiring_mixer_and_option_renders_a_valid_bf16_block(index):
    block = _covering_blocks()[index]
    source = blocks.render_block(block, blocks.sizes_of(block))
    verdict = generator.validate_level3(source)
    assert verdict.ok, (block.ops, verdict.reason, verdict.detail)
    assert verdict.metadata["dtype"] == "bfloat16" and verdict.metadata["level"] == 3
    assert f"{block.wiring}_{block.norm}" in source.splitlines()[0]


def test_the_covering_blocks_cover_everything():
    names = {p.name for b in _covering_blocks() for p in b.parts}
    assert set(blocks._MLPS) <= names and {"token_mlp", "causal_conv", "gated_conv"} <= names
    assert {b.wiring for b in _covering_blocks()} == set(blocks.WIRINGS)
    attention = {part for part in names if part.startswith(("mha", "gqa"))}
    for word in ("mha", "gqa", "causal", "full", "window", "rope", "qknorm"):
        assert any(word in a for a in attention), word


def test_a_block_over_the_memory_bound_is_rejected():
    """64 sequences of 2048 tokens, 16 heads: the fp32 scores alone are 16 GiB (the oracle's float64 run twice that)."""
    rng = random.Random(0)
    block = _block("pre", "rmsnorm", [blocks.attention(rng, "causal", False, False, False), blocks.mlp(rng, "swiglu")])
    sizes = blocks.sizes_of(block)
    sizes["full"] = {**sizes["full"], "batch_size": 64, "seq_len": 2048}
    verdict = generator.validate_level3(blocks.render_block(block, sizes))
    assert verdict.reason == "too_large" and "MiB" in verdict.detail


def test_unknown_level_is_refused():
    from kernel_gym.errors import ConfigError

    with pytest.raises(ConfigError, match="level"):
        generate(1, level=4)
