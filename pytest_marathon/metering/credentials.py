"""Whose credentials reach the model providers: the user's, held by the proxy only.

The runner's environment names the upstreams and holds the user's keys; an agent's environment
gets the proxy's URLs and a placeholder in every credential variable instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: The key agent processes get instead of the user's: not a secret, the proxy replaces it.
PLACEHOLDER_KEY = "marathon-metered-placeholder"
#: Credentials an agent's environment must not carry when the proxy runs (set to the placeholder).
CREDENTIAL_VARIABLES = (
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
#: The ones every metered agent gets, so an SDK that insists on a key finds one.
_ALWAYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@dataclass(frozen=True)
class Upstream:
    """Where one provider's calls go, with the user's credentials as request headers."""

    base_url: str
    auth_headers: Mapping[str, str]


def upstreams_from_env(env: Mapping[str, str] | None = None) -> dict[str, Upstream]:
    """The user's providers from the runner's environment: OPENAI_BASE_URL / OPENAI_API_KEY and
    ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN / CLAUDE_CODE_OAUTH_TOKEN as a
    bearer token), with the providers' public endpoints as defaults."""
    env = os.environ if env is None else env
    openai_auth: dict[str, str] = {}
    if env.get("OPENAI_API_KEY"):
        openai_auth["authorization"] = f"Bearer {env['OPENAI_API_KEY']}"
    anthropic_auth: dict[str, str] = {}
    if env.get("ANTHROPIC_API_KEY"):
        anthropic_auth["x-api-key"] = env["ANTHROPIC_API_KEY"]
    else:
        token = env.get("ANTHROPIC_AUTH_TOKEN") or env.get("CLAUDE_CODE_OAUTH_TOKEN")
        if token:
            anthropic_auth["authorization"] = f"Bearer {token}"
    return {
        "openai": Upstream(
            (env.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/"), openai_auth
        ),
        "anthropic": Upstream(
            (env.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL).rstrip("/"),
            anthropic_auth,
        ),
    }


def agent_environment(
    base_urls: Mapping[str, str], runner_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables an agent process gets so that its model calls go through the proxy: the
    base URLs, and the placeholder in the API key variables and in every other credential
    variable the runner's environment sets (so none of the user's reaches the agent). Nothing
    when the run has no proxy: the agent then uses the user's environment as it is."""
    if not base_urls:
        return {}
    runner_env = os.environ if runner_env is None else runner_env
    env = {
        name: PLACEHOLDER_KEY
        for name in CREDENTIAL_VARIABLES
        if name in _ALWAYS or name in runner_env
    }
    if "openai" in base_urls:
        env["OPENAI_BASE_URL"] = base_urls["openai"]
    if "anthropic" in base_urls:
        env["ANTHROPIC_BASE_URL"] = base_urls["anthropic"]
    return env


