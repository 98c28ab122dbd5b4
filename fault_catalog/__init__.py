"""Fault catalog entries per app (installed as pytest_marathon.fault_catalog)."""
