"""Isolation of agent code from the runner: child processes for plug-ins, a bubblewrap sandbox
for every agent process, and the isolation level a run records (ARCHITECTURE.md §6).

Kept light to import: the child process imports this package before the plug-in.
"""
