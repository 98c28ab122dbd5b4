"""Offline scoring of run bundles (ARCHITECTURE.md section 7; output: docs/score-json.md).

Imports only `bundle`: the scorer must be able to re-score any bundle without the twin,
a backend or the runner.
"""

from .attribution import normalise_artifact, workload_of
from .evidence import ScoreRefusal
from .scorer import OUTCOMES, SCORER_VERSION, median_time, score_bundle

__all__ = [
    "OUTCOMES",
    "SCORER_VERSION",
    "ScoreRefusal",
    "median_time",
    "normalise_artifact",
    "score_bundle",
    "workload_of",
]
