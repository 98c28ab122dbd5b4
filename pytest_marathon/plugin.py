"""pytest hooks of pytest-marathon (options, collection, fixtures, results)."""
