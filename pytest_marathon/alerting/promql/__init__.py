"""A PromQL evaluator over the twin's series store.

The same engine answers alert rules and the agents' `query_metrics` tool, so it follows the
Prometheus engine closely (extrapolated `rate`, one-to-one vector matching, incremental `avg`,
bucket interpolation of `histogram_quantile`) and refuses what it does not implement with a
`PromQLError` naming the construct, rather than returning a plausible wrong answer.

Queries are parsed once and compiled into a small tree of nodes, one module per kind of node.
Modules import only modules listed before them (at run time):
- `values`: sample and label types, `PromQLError`, Go-compatible float arithmetic;
- `nodes`: the node base class and the cache shared within one evaluation time;
- `windows`: a series' samples in a range window, and Prometheus' extrapolation;
- `selectors`: vector and matrix selectors over an incrementally grown series index;
- `reductions`: mean, variance, quantile, min and max shared by several node kinds;
- `range_functions`, `functions`, `histogram`, `aggregations`, `binary`: the other nodes;
- `compiler`: the `promql_parser` AST to nodes, and what is refused;
- `engine`: `PromQLEngine`, the entry point.
"""

from pytest_marathon.alerting.promql.compiler import SUPPORTED_FUNCTIONS, compile_query
from pytest_marathon.alerting.promql.engine import PromQLEngine
from pytest_marathon.alerting.promql.values import NAME, PromQLError

__all__ = ["NAME", "SUPPORTED_FUNCTIONS", "PromQLEngine", "PromQLError", "compile_query"]
