"""Baseline agents and the agent protocol (installed as pytest_marathon.agents)."""
