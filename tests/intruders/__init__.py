"""Intruders: agents that try to get past the tools to the answers and the runner.

`attacks.py` is the list of attempts, shared by the plug-in intruder (`agents.py`, run in its
child process) and the `cmd:` intruder (`tests/agent_programs/intruder.py`). The test tells them
exactly where to look (`INTRUDER_TARGETS`), which is more than a real intruder knows.
"""
