"""The LLM-backed generator against a tiny local OpenAI-compatible server (http.server in a thread)."""

import json

import pytest

from kernel_gym.cli import main
from kernel_gym.errors import KernelGymError
from kernel_gym.tasks.llm import chat_completion, extract_code

GOOD = '''"""Linear, then hardswish, then a per-row L2 normalisation."""
import torch
import torch.nn as nn

batch_size = 2048
in_features = 4096
out_features = 4096

KERNEL_GYM = {
    "cpu": {"batch_size": 16, "in_features": 64, "out_features": 32},
    "alt": {"batch_size": 19, "in_features": 45, "out_features": 27},
    "full_alt": {"batch_size": 1999, "in_features": 4001, "out_features": 3999},
    "dtype": "float32",
    "level": 2,
}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = torch.nn.functional.hardswish(self.linear(x) * 3.0)
        return torch.nn.functional.normalize(x, dim=1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''
CONSTANT = GOOD.replace("return torch.nn.functional.normalize(x, dim=1)", "return x * 0.0 + 1.0")


@pytest.fixture
def server(openai_server):
    """Answers each chat completion with the next canned reply; records the request bodies."""
    return openai_server.url, openai_server.replies, openai_server.requests


def test_chat_completion_and_code_extraction(server):
    url, replies, requests = server
    replies.append("Here you go:\n```python\nprint(1)\n```\nand a better one\n```python\nprint(2)\n```")
    text = chat_completion(url, "m", [{"role": "user", "content": "hi"}], seed=3)
    assert extract_code(text) == "print(2)\n"
    assert requests[0]["path"] == "/v1/chat/completions"
    assert requests[0]["body"]["model"] == "m" and requests[0]["body"]["seed"] == 3
    assert extract_code("no fences") is None
    with pytest.raises(KernelGymError, match="LLM endpoint"):
        chat_completion("http://127.0.0.1:9/v1", "m", [], timeout=2)


@pytest.mark.timeout(120)
def test_llm_programs_are_validated_like_sampled_ones(server, tmp_path, capsys):
    url, replies, requests = server
    replies += ["I cannot help.", f"```python\n{CONSTANT}```", f"```python\n{GOOD}```"]
    out = tmp_path / "llm"
    code = main(["tasks", "generate", "--n", "1", "--seed", "0", "--out", str(out), "--llm-url", url,
                 "--model", "tiny", "--max-attempts", "3"])
    assert code == 0, capsys.readouterr()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator"] == "llm" and manifest["model"] == "tiny"
    assert manifest["rejected"] == {"constant": 1, "format": 1} and manifest["attempts"] == 3
    (entry,) = manifest["tasks"].values()
    assert entry["signature"] == ["addmm", "mul", "hardswish", "linalg_vector_norm", "clamp_min", "div"]
    assert entry["ops"] == ["llm", *entry["signature"]] and entry["baseline_ms_source"] == "estimate"
    assert (out / entry["file"]).read_text() == GOOD
    prompt = requests[0]["body"]["messages"][-1]["content"]
    assert "KERNEL_GYM" in prompt and "conv2d" in prompt and "groupnorm" in prompt
    assert len(requests) == 3
