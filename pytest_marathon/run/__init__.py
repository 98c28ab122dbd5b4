"""Pieces of the marathon runner (`pytest_marathon.runner`): agent invocation under a budget,
progress display, the noop baseline cache, and the `run`/`report` commands."""
