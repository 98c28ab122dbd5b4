"""Scenario files (installed as pytest_marathon.scenarios)."""
