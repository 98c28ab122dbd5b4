"""The documentation, shipped in the wheel as `pytest_marathon.docs` so that
`pytest-marathon docs NAME` shows the page a message points at, offline and for the installed
release."""
