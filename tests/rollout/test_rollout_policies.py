"""Policies: scripted, replay, an OpenAI-compatible server (a tiny local one), and a tiny random transformers model."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernel_gym.errors import ConfigError, UnknownNameError
from kernel_gym.policies import (
    HFPolicy,
    OpenAIPolicy,
    PolicyError,
    ReplayPolicy,
    Request,
    ScriptedPolicy,
    list_policies,
    make_policy,
)
from kernel_gym.rollout import evaluate


def req(task="level1/relu", turn=1, trajectory=0, config="2x2", seed=0, prompt="p"):
    return Request(prompt=prompt, task=task, turn=turn, trajectory=trajectory, config=config, seed=seed)


def test_specs_and_registry(tmp_path):
    assert {"replay", "scripted", "openai", "hf"} <= set(list_policies())
    with pytest.raises(UnknownNameError, match="Did you mean 'replay'"):
        make_policy("replya:x.jsonl")
    with pytest.raises(ConfigError, match="KIND:ARG"):
        make_policy("replay")
    demo = make_policy("scripted:demo")
    assert demo.generate([req(turn=1), req(turn=3), req(turn=9)])[2] == demo.generate([req(turn=3)])[0]
    script = tmp_path / "my_script.py"
    script.write_text("def respond(request):\n    return f'{request.task} turn {request.turn}'\n"
                      "OTHER = ['a', 'b']\n")
    assert make_policy(f"scripted:{script}").generate([req(turn=2)]) == ["level1/relu turn 2"]
    assert make_policy(f"scripted:{script}:OTHER").generate([req(turn=1), req(turn=2), req(turn=5)]) == ["a", "b", "b"]
    assert make_policy("openai:http://127.0.0.1:9/").base_url == "http://127.0.0.1:9/v1"


def test_scripted_forms(solution):
    by_task = ScriptedPolicy({"level1/relu": ["r1", "r2"], "*": lambda r: f"other {r.seed}"})
    assert by_task.generate([req(turn=2), req(task="level1/softmax", seed=7)]) == ["r2", "other 7"]
    folder = ScriptedPolicy.from_folder(__import__("pathlib").Path(__file__).parents[1] / "solutions")
    (text,) = folder.generate([req()])
    assert "```python" in text and solution("level1/relu").strip() in text
    with pytest.raises(PolicyError, match="no solution"):
        folder.generate([req(task="level9/nothing")])
    with pytest.raises(ConfigError):
        ScriptedPolicy([])


def test_replay_lookup_rules(tmp_path):
    path = tmp_path / "responses.jsonl"
    lines = [
        {"task": "A", "response": "A sample 0"},
        {"task": "A", "response": "A sample 1"},
        {"task": "A", "trajectory": 1, "turn": 2, "completion": "A t1 turn 2"},
        {"task": "B", "trajectory": 0, "text": "B turn 1"},
        {"task": "B", "trajectory": 0, "text": "B turn 2"},
        {"config": "9x9", "task": "B", "trajectory": 0, "turn": 1, "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "B in 9x9"}]},
        "anything else",
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    policy = ReplayPolicy(path)
    got = policy.generate([req("A", trajectory=0), req("A", trajectory=1), req("A", trajectory=2),
                           req("A", trajectory=1, turn=2), req("B", turn=1), req("B", turn=2),
                           req("B", turn=1, config="9x9"), req("C", trajectory=5)])
    assert got == ["A sample 0", "A sample 1", "A sample 0", "A t1 turn 2", "B turn 1", "B turn 2", "B in 9x9",
                   "anything else"]
    strict = ReplayPolicy([{"task": "A", "response": "x"}])
    with pytest.raises(PolicyError, match="no response"):
        strict.generate([req("B")])
    assert ReplayPolicy([{"task": "A", "response": "x"}], on_missing="empty").generate([req("B")]) == [""]
    (tmp_path / "list.json").write_text(json.dumps(["one", "two"]))
    assert make_policy(f"replay:{tmp_path / 'list.json'}").generate([req(trajectory=3)]) == ["two"]
    with pytest.raises(ConfigError, match="no response text"):
        ReplayPolicy([{"task": "A"}])


def test_replaying_a_rollout_log_reproduces_its_responses(evaluator, tmp_path):
    first = ScriptedPolicy(lambda r: f"{r.config} {r.task} {r.trajectory} {r.turn} {r.seed}")
    evaluate(first, "level1/relu", "2x1,1x2", out=tmp_path / "a", evaluator=evaluator, env={"device": "cpu"})
    replay = make_policy(f"replay:{tmp_path / 'a' / 'rollout.jsonl'}")
    result = evaluate(replay, "level1/relu", "2x1,1x2", out=tmp_path / "b", evaluator=evaluator, env={"device": "cpu"})
    a = (tmp_path / "a" / "rollout.jsonl").read_text().splitlines()
    b = (tmp_path / "b" / "rollout.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["action"] for x in a) == sorted(json.loads(x)["action"] for x in b)
    assert result.metrics()["2x1"].not_okay_reasons == {"no_code_block": 2}


# ---- OpenAI-compatible server --------------------------------------------------------------------------------
class _Server(BaseHTTPRequestHandler):
    bodies: list = []
    fail_first = [True]
    answer = ""

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def _send(self, code, payload):
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "tiny-coder", "object": "model"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": "not found"})
        if self.fail_first[0]:
            self.fail_first[0] = False
            return self._send(503, {"error": "warming up"})
        type(self).bodies.append({**body, "auth": self.headers.get("Authorization")})
        message = {"role": "assistant", "content": self.answer, "reasoning_content": "ReLU is memory-bound."}
        self._send(200, {"id": "c1", "object": "chat.completion", "model": body["model"],
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


@pytest.fixture
def server(solution, respond):
    _Server.bodies, _Server.fail_first, _Server.answer = [], [True], respond(solution("level1/relu"))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.timeout(120)
def test_openai_policy_against_a_local_server(server, evaluator):
    policy = OpenAIPolicy(server, api_key="k", temperature=0.7, top_p=0.9, max_tokens=512,
                          system_prompt="You write Triton kernels.", concurrency=2, retries=2)
    result = evaluate(policy, "level1/relu", "1x1", evaluator=evaluator, env={"device": "cpu"}, seed=1)
    (traj,) = result.trajectories
    assert traj.attempts[0].correct  # the canned completion is the genuine solution
    (body,) = _Server.bodies  # the 503 was retried
    assert body["model"] == "tiny-coder" and body["auth"] == "Bearer k"
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.7, 0.9, 512)
    assert isinstance(body["seed"], int)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "level1/relu" in body["messages"][1]["content"] or "ReLU" in body["messages"][1]["content"]
    text = policy.generate([req()])[0]
    assert text.startswith("<think>\nReLU is memory-bound.\n</think>") and text.endswith(_Server.answer)


def test_openai_policy_reports_a_dead_server():
    policy = OpenAIPolicy("http://127.0.0.1:9", model="m", retries=0, timeout_s=5)
    with pytest.raises(PolicyError, match="failed after 1 tries"):
        policy.generate([req()])


# ---- Hugging Face transformers ---------------------------------------------------------------------------------
WORDS = ["<unk>", "<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>", "```python", "```", "import",
         "torch", "triton", "class", "ModelNew", "def", "forward", "return", "x", "kernel"]
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")


@pytest.fixture(scope="module")
def tiny_lm():
    """A random 1-layer Llama and a word-level tokenizer with a chat template, built here (no download)."""
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece()  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16384,
                         pad_token_id=1, bos_token_id=2, eos_token_id=3)
    torch.manual_seed(0)
    return LlamaForCausalLM(config), tokenizer


@pytest.mark.timeout(180)
def test_hf_policy_drives_one_step(tiny_lm, evaluator):
    model, tokenizer = tiny_lm
    policy = HFPolicy(model, tokenizer, max_new_tokens=16, batch_size=2, system_prompt="Write kernels.")
    result = evaluate(policy, "level1/relu", "2x1", evaluator=evaluator, env={"device": "cpu"})
    assert len(result.trajectories) == 2
    attempt = result.trajectories[0].attempts[0]
    assert not attempt.format_ok and attempt.not_okay in ("empty", "no_code_block", "garbage_opening")
    requests = [req(seed=5, prompt="write a triton kernel"), req(seed=6, trajectory=1, prompt="class ModelNew")]
    out = policy.generate(requests)
    assert len(out) == 2 and all(isinstance(t, str) for t in out)
    assert policy.generate(requests) == out  # seeded
    assert set(" ".join(out).split()) <= set(WORDS)
    chat = tokenizer.apply_chat_template(requests[0].messages("S"), tokenize=False, add_generation_prompt=True)
    assert chat == "<|system|> S <|user|> write a triton kernel <|assistant|>"
