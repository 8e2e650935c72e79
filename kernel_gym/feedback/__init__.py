"""Feedback: jinja2 templates, turn summaries, and the observation text."""

from kernel_gym.feedback.render import TurnView, render_feedback, render_observation, render_prompt, status_line
from kernel_gym.feedback.summarize import (
    ExtractiveSummarizer,
    ModelSummarizer,
    OpenAISummarizer,
    Summarizer,
    SummaryResult,
    extractive_summary,
    make_summarizer,
    summarize_turn,
)

__all__ = ["ExtractiveSummarizer", "ModelSummarizer", "OpenAISummarizer", "Summarizer", "SummaryResult", "TurnView",
           "extractive_summary", "make_summarizer", "render_feedback", "render_observation", "render_prompt",
           "status_line", "summarize_turn"]
