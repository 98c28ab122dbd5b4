"""pytest-marathon: continuous fault marathons for autonomous SRE agents.

The release string is part of every bundle: scores are only comparable within one release,
because the twin, the rule pack and the catalog are versioned with it.
"""

__version__ = "0.1.0"
RELEASE = f"pytest-marathon {__version__}"
