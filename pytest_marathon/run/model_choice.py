"""The model a run's model-based agents ask, chosen per run (`--marathon-model`, `--model`).

The baselines read MARATHON_MODEL (`agents/llm.py`), and programs run by `cmd:` inherit the
runner's environment, so a run's choice is the variable, set for the length of the recording and
restored after it: one place serves in-process agents and external programs alike. The choice is
recorded in the manifest's config (`RunConfig.model`); it is no part of the baseline identity, as
the no-action baseline asks no model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

MODEL_VARIABLE = "MARATHON_MODEL"


@contextmanager
def model_environment(model: str | None) -> Iterator[None]:
    """MARATHON_MODEL set to `model` inside the block (left as it is when `model` is None)."""
    if model is None:
        yield
        return
    before = os.environ.get(MODEL_VARIABLE)
    os.environ[MODEL_VARIABLE] = model
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(MODEL_VARIABLE, None)
        else:
            os.environ[MODEL_VARIABLE] = before
