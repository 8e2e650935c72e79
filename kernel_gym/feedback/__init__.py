"""Feedback: jinja2 templates, turn summaries, and the observation text."""

from kernel_gym.feedback.render import TurnView, render_feedback, render_observation, render_prompt, status_line
from kernel_gym.feedback.summarize import Summarizer, extractive_summary

__all__ = ["Summarizer", "TurnView", "extractive_summary", "render_feedback", "render_observation", "render_prompt",
           "status_line"]
