"""Episodic mode: AIOpsLab's single problems (detection, localization, root-cause analysis,
mitigation) on the twin, each one fault under the app's own load, one agent acting step by step
through the Agent-Cloud Interface until it submits or runs out of steps."""

from pytest_marathon.episodic.problems import Problem, problem_pool
from pytest_marathon.episodic.session import EpisodeResult, run_problem

__all__ = ["EpisodeResult", "Problem", "problem_pool", "run_problem"]
