"""The LLM reviewer (kernel_gym.preference.llm_review) against a scripted local OpenAI-compatible endpoint
(http.server in a thread): verdicts, caching per code hash, and "no signal" with a clear note when the endpoint is
refused, errs, talks garbage or is too slow."""

from __future__ import annotations

import functools
import json
import pickle
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernel_gym.errors import ConfigError
from kernel_gym.policies import ScriptedPolicy
from kernel_gym.preference import LLMReviewer, make_reviewer, parse_verdict
from kernel_gym.preference.llm_review import ReviewReplyError

GENUINE = '{"genuine": true, "quality": 8, "reason": "fused, coalesced"}'
WRAPPER = 'Looking at it... {"genuine": false, "quality": 1, "reason": "forward calls torch.relu"}'


class _Endpoint(BaseHTTPRequestHandler):
    mode = "ok"  # ok | garbage | error | slow
    answer = GENUINE
    prompts: list = []

    def log_message(self, *args):
        pass

    def _send(self, code, payload):
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).prompts.append(body["messages"][-1]["content"])
        if self.mode == "error":
            return self._send(500, {"error": "model crashed"})
        if self.mode == "slow":
            time.sleep(3)
        content = "I cannot say." if self.mode == "garbage" else self.answer
        self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})


@pytest.fixture
def endpoint():
    _Endpoint.mode, _Endpoint.answer, _Endpoint.prompts = "ok", GENUINE, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"openai:http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def refused_url() -> str:
    with socket.socket() as s:  # a port that was free a moment ago and has no listener now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"openai:http://127.0.0.1:{port}/v1"


REFERENCE = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


def test_verdict_from_the_endpoint_and_the_rubric_prompt(endpoint):
    reviewer = LLMReviewer(endpoint, model="reviewer-model")
    verdict = reviewer.review("level1/relu", REFERENCE, "@triton.jit\ndef k(): ...")
    assert (verdict.score, verdict.genuine, verdict.quality, verdict.reason) == (0.8, True, 8.0, "fused, coalesced")
    (prompt,) = _Endpoint.prompts
    assert "GENUINE" in prompt and "level1/relu" in prompt and REFERENCE.strip() in prompt
    assert "@triton.jit" in prompt and '"genuine"' in prompt


def test_second_identical_code_does_not_call_the_endpoint(endpoint, tmp_path):
    reviewer = LLMReviewer(endpoint, model="m", cache_dir=tmp_path / "cache")
    first = reviewer.review("level1/relu", REFERENCE, "code A")
    second = reviewer.review("level1/relu", REFERENCE, "code A")
    assert len(_Endpoint.prompts) == 1 and reviewer.calls == 1
    assert second.cached and not first.cached and second.score == first.score
    reviewer.review("level1/relu", REFERENCE, "code B")
    assert len(_Endpoint.prompts) == 2
    again = LLMReviewer(endpoint, model="m", cache_dir=tmp_path / "cache")  # a new process: the disk cache answers
    assert again.review("level1/relu", REFERENCE, "code A").cached and len(_Endpoint.prompts) == 2


@pytest.mark.parametrize("mode,note", [("error", "HTTP 500"), ("garbage", "reviewer reply unusable"),
                                       ("slow", "timed out")])
def test_failures_give_no_signal_with_a_note(endpoint, mode, note):
    _Endpoint.mode = mode
    reviewer = LLMReviewer(endpoint, model="m", timeout_s=1.0)
    start = time.monotonic()
    verdict = reviewer.review("level1/relu", REFERENCE, "code")
    assert time.monotonic() - start < 2.5  # the deadline holds, even while the endpoint sleeps
    assert verdict.score is None and note in verdict.note
    # after the endpoint fails it is left alone for retry_after_s (no call, an immediate answer);
    # a bad reply is no reason to stop asking
    calls = len(_Endpoint.prompts)
    later = reviewer.review("level1/relu", REFERENCE, "other code")
    assert later.score is None
    if mode == "garbage":
        assert len(_Endpoint.prompts) == calls + 1 and "unusable" in later.note
    else:
        assert "not asked again" in later.note and len(_Endpoint.prompts) == calls
    reviewer.close()


def test_connection_refused_and_recovery(endpoint):
    reviewer = LLMReviewer(refused_url(), model="m", retry_after_s=0.0)
    verdict = reviewer.review("level1/relu", REFERENCE, "code")
    assert verdict.score is None and verdict.note.startswith("reviewer unavailable:")
    reviewer.policy = LLMReviewer(endpoint, model="m").policy  # the reviewer comes back: asked again at once
    assert reviewer.review("level1/relu", REFERENCE, "code").score == 0.8


def test_failures_are_not_cached(endpoint):
    reviewer = LLMReviewer(endpoint, model="m", retry_after_s=0.0)
    _Endpoint.mode = "garbage"
    assert reviewer.review("t", REFERENCE, "code").score is None
    _Endpoint.mode = "ok"
    assert reviewer.review("t", REFERENCE, "code").score == 0.8 and len(_Endpoint.prompts) == 2


@pytest.mark.parametrize("reply,expected", [
    (GENUINE, (True, 8.0, "fused, coalesced")),
    (WRAPPER, (False, 1.0, "forward calls torch.relu")),
    ('```json\n{"Genuine": "yes", "quality": "7/10"}\n```', (True, 7.0, "")),
    ('<think>{"genuine": false}</think>Format: {"genuine": bool}. {"genuine": true, "quality": 6}', (True, 6.0, "")),
    ("Genuine: no. It just calls torch.relu.", (False, None, "")),
    ("GENUINE: yes\nQUALITY: 9/10", (True, 9.0, "")),
])
def test_parse_verdict_is_robust(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize("reply", ["", "I cannot say.", '{"genuine": true}', '{"genuine": true, "quality": 42}',
                                   '{"quality": 7}', "genuine: maybe"])
def test_parse_verdict_rejects_garbage(reply):
    with pytest.raises(ReviewReplyError):
        parse_verdict(reply)


def test_make_reviewer_specs(endpoint, tmp_path):
    assert make_reviewer(None) is None
    reviewer = make_reviewer({"policy": endpoint, "model": "m", "timeout_s": 5,
                              "template": "Rate {{ code }}: JSON please"})
    assert reviewer.timeout_s == 5 and reviewer.review("t", "ref", "k1").score == 0.8
    assert _Endpoint.prompts[-1] == "Rate k1: JSON please"
    scripted = LLMReviewer(ScriptedPolicy(lambda r: WRAPPER))  # any policy works, e.g. a local model
    assert scripted.review("t", "ref", "k").genuine is False
    with pytest.raises(ConfigError):
        make_reviewer({"timeout_s": 5})
    with pytest.raises(ConfigError):
        LLMReviewer(42)



def test_the_old_name_llm_judge_still_imports_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="LLMReviewer"):
        from kernel_gym.preference import LLMJudge
    assert LLMJudge is LLMReviewer

# ---- in the env ------------------------------------------------------------------------------------------------
def test_env_reviewer_signal_and_review_flag(make_env, solution, respond, relu_code, endpoint):
    _Endpoint.answer = WRAPPER
    score = {"name": "linear", "weights": {"correct": 0.3, "speedup": 1.0, "judge": 0.2}}
    env = make_env(max_turns=2, score=score, judge={"policy": endpoint, "model": "m", "timeout_s": 5})
    env.reset(seed=0)
    _, reward, _, _, info = env.step(respond(solution("level1/relu")))
    assert info["correct"] and info["hacks"] == []  # a review flag is not a hack verdict
    assert info["review_flags"] == ["judge_not_genuine"]
    assert info["judge"]["genuine"] is False and info["judge"]["score"] == 0.0
    assert info["signals"]["judge"] == 0.0 and info["signals"]["judge_genuine"] == 0.0
    assert reward == pytest.approx(0.3 + info["speedup"])
    _, _, _, _, info = env.step(respond(relu_code(body="x")))  # wrong: not sent to the reviewer
    assert info["judge"]["score"] is None and len(_Endpoint.prompts) == 1 and info["review_flags"] == []


def test_env_keeps_going_when_the_reviewer_is_down(make_env, solution, respond):
    score = {"name": "linear", "weights": {"correct": 0.3, "speedup": 1.0, "judge": 0.2}}
    env = make_env(max_turns=1, score=score, judge=refused_url())
    env.reset(seed=0)
    _, reward, _, truncated, info = env.step(respond(solution("level1/relu")))
    assert truncated and info["correct"] and reward == pytest.approx(0.3 + info["speedup"])
    assert info["judge"]["score"] is None and "reviewer unavailable" in info["judge"]["note"]
    assert "judge" not in info["signals"] and info["reward_terms"]["judge"] == 0.0 and info["review_flags"] == []


# ---- pickling: by configuration, for AsyncVectorEnv sub-envs ---------------------------------------------------------
def test_reviewer_pickles_by_its_spec_and_still_reviews(endpoint, tmp_path):
    reviewer = LLMReviewer(endpoint, model="m", timeout_s=5, cache_dir=tmp_path / "cache")
    assert reviewer.review("t", REFERENCE, "code A").score == 0.8 and len(_Endpoint.prompts) == 1
    copy = pickle.loads(pickle.dumps(reviewer))
    assert copy._policy is None and copy.calls == 0  # nothing built yet: the policy comes from its spec on first use
    assert copy.timeout_s == 5 and copy.cache_key("t", REFERENCE, "k") == reviewer.cache_key("t", REFERENCE, "k")
    assert copy.review("t", REFERENCE, "code A").cached and len(_Endpoint.prompts) == 1  # the disk cache, re-opened
    verdict = copy.review("t", REFERENCE, "code B")
    assert verdict.score == 0.8 and not verdict.cached and len(_Endpoint.prompts) == 2 and copy.calls == 1
    assert copy.policy.model == "m" and copy.policy.timeout_s == 5  # the spec's options, rebuilt
    scripted = pickle.loads(pickle.dumps(LLMReviewer(ScriptedPolicy(WRAPPER))))  # a Policy object: pickled as itself
    assert scripted.review("t", "ref", "k").genuine is False
    reviewer.close()
    copy.close()


def test_unpickled_reviewer_that_cannot_build_its_policy_gives_no_signal():
    reviewer = LLMReviewer("openai:http://127.0.0.1:9/v1", model="m")
    state = reviewer.__getstate__()
    state["spec"] = ("openai:not-a-url", state["spec"][1])
    broken = LLMReviewer.__new__(LLMReviewer)
    broken.__setstate__(state)
    verdict = broken.review("t", REFERENCE, "code")
    assert verdict.score is None and verdict.note.startswith("reviewer unavailable: could not build openai:not-a-url")


@pytest.mark.timeout(240)
def test_async_vector_env_with_a_reviewer_object(endpoint, respond, solution, closing_vector_env):
    import gymnasium as gym

    _Endpoint.answer = WRAPPER
    reviewer = LLMReviewer(endpoint, model="m", timeout_s=20)
    make = functools.partial(gym.make, "kernel_gym:KernelRefine-v0", task="level1/relu", device="cpu", max_turns=2,
                             judge=reviewer)
    # "spawn" pickles the env factory (with "fork", Linux's default before Python 3.14, nothing is pickled)
    with closing_vector_env(gym.vector.AsyncVectorEnv([make, make], shared_memory=False, context="spawn")) as envs:
        envs.reset(seed=0)
        action = respond(solution("level1/relu"))
        _, _, _, _, infos = envs.step((action, action))
        assert infos["correct"].tolist() == [True, True]
        assert [list(f) for f in infos["review_flags"]] == [["judge_not_genuine"]] * 2
        assert infos["signals"]["judge_genuine"].tolist() == [0.0, 0.0]
        assert len(_Endpoint.prompts) == 2  # each sub-env asked the endpoint through its own copy
    assert reviewer.calls == 0  # the parent's reviewer was never used, only copied


# ---- review flags in rollout metrics, reports and logged metrics -------------------------------------------------------
@pytest.mark.timeout(300)
def test_review_flags_in_rollout_metrics_and_report(evaluator, solution, respond, tmp_path):
    from kernel_gym.integrations.openrlhf import turn_logs
    from kernel_gym.report import summary_table, write_report
    from kernel_gym.rollout import evaluate
    from kernel_gym.rollout.log import log_path
    from kernel_gym.trajectory import read_log

    # a scripted reviewer: relu's kernels are "wrappers", sum_reduce's genuine (quality 8); sum_reduce trajectory 1 is
    # prose (not rated, never flagged)
    reviewer = LLMReviewer(ScriptedPolicy({"level1/relu": WRAPPER, "*": GENUINE}))

    def answer(r):
        if r.task == "level1/sum_reduce" and r.trajectory == 1:
            return "I would sum the rows with a tree reduction."
        return respond(solution(r.task))

    result = evaluate(ScriptedPolicy(answer), ["level1/relu", "level1/sum_reduce"], "2x1", out=tmp_path,
                      evaluator=evaluator, env={"device": "cpu", "judge": reviewer}, seed=0)
    m = result.metrics()["2x1"]
    assert m.rates["hack"] == 0 and m.rates["review_flag"] == pytest.approx(2 / 4)  # beside the hack rate
    assert m.review_flags == {"judge_not_genuine": 2}
    assert m.judge_mean == pytest.approx((0.0 + 0.0 + 0.8) / 3)  # over the rated (correct) turns only
    assert m.flat()["rate/review_flag"] == 0.5 and m.flat()["judge/mean"] == pytest.approx(0.8 / 3)
    headers = summary_table(result.metrics()).splitlines()[0].split()
    assert headers[headers.index("hack") + 1] == "review"

    records = read_log(log_path(tmp_path))  # flag names per turn in the log, as the step's info
    flags = {(r["task"], r["trajectory"]): r["info"]["review_flags"] for r in records}
    assert flags == {("level1/relu", 0): ["judge_not_genuine"], ("level1/relu", 1): ["judge_not_genuine"],
                     ("level1/sum_reduce", 0): [], ("level1/sum_reduce", 1): []}
    assert [turn_logs(r["info"])["kernel/review_flags"] for r in records if r["task"] == "level1/relu"] == [1.0, 1.0]

    paths = write_report(tmp_path)
    summary = paths["summary.md"].read_text()
    assert "## Review flags" in summary and "| 2x1 | 50.0% | 2 | 0.267 |" in summary
    assert json.loads(paths["metrics.json"].read_text())["2x1"]["review_flags"] == {"judge_not_genuine": 2}
    assert json.loads((tmp_path / "run.json").read_text())["env"]["judge"].startswith("LLMReviewer('scripted', rubric=")


# ---- a local transformers model as the reviewer --------------------------------------------------------------------
WORDS = ["<unk>", "<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "{", "}", '"genuine":', "true,", "false,",
         '"quality":', "7", "kernel"]


def tiny_reviewer_model():
    """A random 1-layer Llama and a word-level tokenizer with a chat template, built here (no download)."""
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                        bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    config = LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
                         pad_token_id=1, bos_token_id=2, eos_token_id=3)
    torch.manual_seed(0)
    return LlamaForCausalLM(config), tokenizer


@pytest.mark.timeout(180)
def test_local_transformers_reviewer_never_breaks_on_nonsense():
    from kernel_gym.policies import HFPolicy

    model, tokenizer = tiny_reviewer_model()
    reviewer = LLMReviewer(HFPolicy(model, tokenizer, temperature=0.0, max_new_tokens=6), timeout_s=60)
    verdict = reviewer.review("level1/relu", REFERENCE, "@triton.jit\ndef kernel(): ...")
    # a random model answers words, not a verdict: no signal, with the reason, and nothing cached
    assert verdict.score is None and verdict.note.startswith("reviewer reply unusable") and reviewer.calls == 1
    with pytest.raises(ConfigError):
        LLMReviewer("openai:http://127.0.0.1:9/v1", no_such_option=1)


@pytest.mark.timeout(180)
def test_local_model_reviewer_pickles_without_its_model_and_reloads_on_first_use(tmp_path):
    model, tokenizer = tiny_reviewer_model()
    model.save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    reviewer = LLMReviewer(f"hf:{tmp_path / 'tiny'}", max_new_tokens=6, device="cpu", timeout_s=60)
    blob = pickle.dumps(reviewer)
    assert b"LlamaForCausalLM" not in blob and len(blob) < 20_000  # the spec, not the weights
    copy = pickle.loads(blob)
    assert copy._policy is None
    verdict = copy.review("level1/relu", REFERENCE, "@triton.jit\ndef kernel(): ...")
    assert verdict.note.startswith("reviewer reply unusable") and copy.calls == 1  # loaded, asked, answered words
    assert type(copy.policy.model).__name__ == "LlamaForCausalLM"
