"""See docs/internals.md for the contracts of this package."""
