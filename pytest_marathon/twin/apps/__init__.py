"""Application definitions of the twin (one folder per app), shipped as package data."""
