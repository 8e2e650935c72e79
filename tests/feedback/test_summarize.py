"""Kevin's self-summaries: the policy or an OpenAI-compatible endpoint summarizes each turn, cached, with the
extractive summary as the fallback (and the failure in info)."""

from __future__ import annotations

import socket

import pytest

from kernel_gym.feedback import ModelSummarizer, OpenAISummarizer, extractive_summary, summarize_turn

REASONING = ("I fuse the bias add into the GEMM epilogue because the op is memory-bound. "
             "The block size of 128 keeps occupancy high.")


@pytest.fixture
def fake_openai(openai_server):
    """Each answer names its request's number, behind a thinking block the summarizer must drop."""
    openai_server.respond = lambda body: (f"<think>hm</think> SUMMARY({len(openai_server.requests)}): "
                                          "fused the bias into the epilogue.")
    return openai_server.url, openai_server.requests


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_endpoint_summary_is_used_and_cached(fake_openai, monkeypatch):
    url, requests = fake_openai
    monkeypatch.setenv("KG_TEST_KEY", "sk-test")
    summarizer = OpenAISummarizer(url, "tiny-model", api_key_env="KG_TEST_KEY", timeout_s=10)
    first = summarizer.summarize(REASONING)
    assert (first.source, first.error) == ("endpoint", None)
    assert first.text == "SUMMARY(1): fused the bias into the epilogue."  # the thinking block dropped
    assert summarizer.summarize(REASONING) == first  # cached: no second request
    assert len(requests) == 1
    request = requests[0]
    assert request["auth"] == "Bearer sk-test" and request["body"]["model"] == "tiny-model"
    assert REASONING in request["body"]["messages"][-1]["content"]


@pytest.mark.parametrize("where", ["refused", "404"])
def test_failing_endpoint_falls_back_to_extractive(fake_openai, where):
    url = f"http://127.0.0.1:{_closed_port()}/v1" if where == "refused" else fake_openai[0].replace("/v1", "/nope")
    result = OpenAISummarizer(url, "m", timeout_s=5).summarize(REASONING)
    assert result.source == "fallback" and result.error.startswith("endpoint: ")
    assert result.text == extractive_summary(REASONING, 400)


def test_policy_summarizer_prefill_and_empty_answer():
    calls = []

    def generate(messages):
        calls.append(messages)
        return ""  # an empty answer is a failure

    summarizer = ModelSummarizer(generate, max_chars=60)
    result = summarizer.summarize(REASONING)
    assert result.source == "fallback" and "empty" in result.error and len(calls) == 1
    assert len(result.text) <= 60
    summarizer.prefill(REASONING, "  batched summary \n from the trainer ")
    assert summarizer.summarize(REASONING).text == "batched summary from the trainer" and len(calls) == 1


def test_plain_callables_and_no_reasoning():
    assert summarize_turn(lambda r: "mine", REASONING).source == "custom"
    failed = summarize_turn(lambda r: 1 / 0, REASONING)
    assert failed.source == "fallback" and "ZeroDivisionError" in failed.error
    assert summarize_turn(lambda r: "x", "").source == "none"


def test_env_shows_the_endpoint_summary_and_notes_failures(make_env, fake_openai):
    url, requests = fake_openai
    env = make_env(max_turns=2, summarizer={"base_url": url, "model": "m", "api_key_env": None})
    env.reset(seed=0)
    obs, _, _, _, info = env.step("I will fuse everything because it is memory-bound. No code yet.")
    assert info["summary_source"] == "endpoint" and info["summary_error"] is None
    assert info["reasoning_summary"].startswith("SUMMARY(1)") and info["reasoning_summary"] in obs
    env.unwrapped.summarizer.base_url = f"http://127.0.0.1:{_closed_port()}/v1"  # the endpoint goes away
    obs, _, _, _, info = env.step("A different plan: tile the loop because of bandwidth.")
    assert info["summary_source"] == "fallback" and "endpoint" in info["summary_error"]
    assert info["reasoning_summary"] == extractive_summary("A different plan: tile the loop because of bandwidth.",
                                                           400)
    assert len(requests) == 1
