"""Record the shipped model-baseline runs: each model-based baseline through a whole short-5
marathon on Online Boutique, against the scripted model of the tests, its exchanges kept in
`recordings/model-baselines/<run id>.jsonl` and the recorded bundle's content digest in
`expected.json` beside them.

CI replays them (`tests/test_model_baselines_replayed.py`) with no model, no key and no network,
and must get the same content digest. Anything that changes what these agents see (the twin, the
alerts, the tools, a prompt) changes their requests, so a replay then stops at the first request
the recording does not hold, and the recordings are made again:

    python tests/record_model_baselines.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from model_double import ModelDouble  # noqa: E402
from model_double.orbit_script import OrbitScript  # noqa: E402
from model_double.plan_script import PlanScript  # noqa: E402
from model_double.react_script import ReactScript  # noqa: E402
from pytest import MonkeyPatch  # noqa: E402

from pytest_marathon.bundle import read_bundle  # noqa: E402
from pytest_marathon.config import RunConfig  # noqa: E402
from pytest_marathon.runner import run_marathon  # noqa: E402

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings" / "model-baselines"
EXPECTED = "expected.json"
APP, SCENARIO, SEED = "boutique", "short-5", 1
MODEL = "gpt-5-mini"
#: Each baseline with the scripted model that answers its requests.
SCRIPTS: dict[str, Callable[[], Any]] = {
    "react": ReactScript,
    "rag": PlanScript,
    "keep-agent": PlanScript,
    "orbit": OrbitScript,
}
_KEY = "sk-recording-key"


def config_for(agent: str, out_dir: Path, **recording: Path) -> RunConfig:
    return RunConfig(app=APP, agent=agent, seed=SEED, scenario=SCENARIO, out_dir=out_dir, model=MODEL,
                     **recording)


def record(folder: Path = RECORDINGS) -> dict[str, dict[str, str]]:
    """Record every baseline into a fresh `folder`; returns what `expected.json` holds."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    expected: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="marathon-recording-") as scratch:
        for agent, script in SCRIPTS.items():
            with ModelDouble(script=script(), require_key=_KEY) as double, MonkeyPatch.context() as env:
                env.setenv("OPENAI_BASE_URL", double.openai_base_url)
                env.setenv("OPENAI_API_KEY", _KEY)
                config = config_for(agent, Path(scratch) / agent, record_model=folder)
                result = run_marathon(config, baseline_cache=None, score=False)
            digest = read_bundle(result.bundle).manifest["content_digest"]
            expected[config.run_id] = {"agent": agent, "content_digest": digest}
    (folder / EXPECTED).write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")
    return expected


if __name__ == "__main__":
    for run_id, row in record().items():
        print(f"{run_id}: {row['content_digest']}")
