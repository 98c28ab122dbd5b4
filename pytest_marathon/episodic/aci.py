"""The Agent-Cloud Interface of an episodic problem: AIOpsLab's APIs over the twin.

An agent answers each turn with one API call in a markdown code block; the reply is parsed as
AIOpsLab's orchestrator parses it (aiopslab/orchestrator/parser.py: exactly one pair of triple
back-ticks, `name(args)`, a shell command as one quoted string) and carried out here:

* `get_logs(namespace, service)`, `get_metrics(namespace, duration)`, `get_traces(namespace,
  duration)`: AIOpsLab exports metrics and traces to CSV files the agent then reads with
  `read_metrics`/`read_traces`; here the answer is a summary table and the path of the export,
  which `read_metrics`/`read_traces` return (the files live in the episode, not on a disk).
* `exec_shell(command)`: the real `kubectl` against the twin's Kubernetes API server (there is no
  other program and no shell: pipes, redirections and other commands are refused with a message),
  with AIOpsLab's block list (aiopslab/orchestrator/actions/base.py `exec_shell`).
* `submit(...)`: the task's answer; the episode ends.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_marathon.alerting import PromQLEngine

#: AIOpsLab's refusals, word for word in meaning (aiopslab/orchestrator/actions/base.py).
BLOCK_LIST: tuple[tuple[str, str], ...] = (
    ("kubectl edit", "Error: Cannot use `kubectl edit`. Use `kubectl patch` instead."),
    ("edit svc", "Error: Cannot use `kubectl edit`. Use `kubectl patch` instead."),
    ("kubectl port-forward", "Error: Cannot use `kubectl port-forward` because it is an interactive command."),
    ("kubectl logs -f", "Error: Cannot use `kubectl logs -f`. Use `kubectl logs` instead."),
)
SHELL_OPERATORS = frozenset("();<>|&")
FORMAT_ERROR = (
    "Format validation failure. Only have one pair of three ticks in your block and check the ticks.\n"
    "Correct example:\n```\nexec_shell(\"kubectl get pods -n <namespace>\")\n```"
)
KUBECTL_TIMEOUT_S = 30.0
OUTPUT_LIMIT = 20_000


class ParseError(ValueError):
    """A reply that is not one API call; the message goes back to the agent as the observation."""


@dataclass(frozen=True)
class Call:
    api: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def parse_reply(reply: str) -> Call:
    """One API call out of an agent's reply (AIOpsLab's ResponseParser, rewritten)."""
    if not isinstance(reply, str) or len(re.findall(r"```\s*\n(.*?)\n```", reply, re.DOTALL)) != 1:
        raise ParseError(FORMAT_ERROR)
    lines = reply.split("\n")
    fences = [i for i, line in enumerate(lines) if "```" in line]
    block = "\n".join(lines[fences[0] + 1:fences[1]]).strip()
    opened, closed = block.find("("), block.rfind(")")
    if opened <= 0 or closed < opened:
        raise ParseError(f"Error when parsing response: no API call in {block!r}; use name(arguments)")
    api = block[:opened].strip()
    inner = block[opened + 1:closed].strip()
    if api == "exec_shell":
        if inner.startswith("command="):
            inner = inner[len("command="):].strip()
        if len(inner) < 2 or inner[0] != inner[-1] or inner[0] not in "\"'":
            raise ParseError("Error when parsing response: commands must be quoted strings")
        quote = inner[0]
        # a quoted literal's own escaped quote is unescaped (AIOpsLab unescapes both kinds, which
        # breaks a JSON patch inside a single-quoted command)
        return Call(api, (inner[1:-1].replace("\\" + quote, quote),), {})
    if not inner:
        return Call(api, (), {})
    try:
        call = ast.parse(f"f({inner})", mode="eval").body
        assert isinstance(call, ast.Call)
        args = tuple(ast.literal_eval(a) for a in call.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError, AssertionError) as exc:
        raise ParseError(f"Error when parsing response: arguments must be literals: {exc}") from None
    return Call(api, args, kwargs)


class Interface:
    """The APIs of one episode over one twin; `kubectl` is called with `kubeconfig`."""

    def __init__(self, backend: Any, namespace: str, kubeconfig: Path | None, cache_dir: Path,
                 *, run_locked: Callable[[Callable[[], Any]], Any]) -> None:
        self.backend = backend
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir
        self._locked = run_locked
        self._files: dict[str, str] = {}

    def documentation(self, task: str) -> str:
        submit = {
            "detection": 'submit("Yes") or submit("No"): whether there is an anomaly',
            "localization": 'submit(["<service>", ...]): the faulty services, most likely first',
            "analysis": 'submit({"system_level": "...", "fault_type": "..."}): system level (Hardware, '
                        "Operating System, Virtualization, Application) and fault type (Misconfiguration, "
                        "Code Defect, Authentication Issue, Network/Storage Issue, Operation Error, "
                        "Dependency Problem)",
            "mitigation": "submit(): when the system is healthy again",
        }[task]
        return "\n".join((
            "get_logs(namespace: str, service: str) -> the service's recent log lines",
            "get_metrics(namespace: str, duration: int = 5) -> per-service request rate, error ratio, "
            "p95 latency, CPU, memory and restarts over the last `duration` minutes",
            "get_traces(namespace: str, duration: int = 5) -> recent traces: route, duration, status, services",
            "read_metrics(file_path: str) -> the CSV series a get_metrics answer names",
            "read_traces(file_path: str) -> the CSV spans a get_traces answer names",
            "exec_shell(command: str) -> the output of one kubectl command against the cluster "
            "(no shell: no pipes or other programs; kubectl edit, port-forward and logs -f are refused)",
            submit,
        ))

    # --- the APIs ------------------------------------------------------------------------------------
    def perform(self, call: Call) -> str:
        handler = {"get_logs": self.get_logs, "get_metrics": self.get_metrics, "get_traces": self.get_traces,
                   "read_metrics": self.read_file, "read_traces": self.read_file,
                   "exec_shell": self.exec_shell}.get(call.api)
        if handler is None:
            return f"Error: unknown API {call.api!r}; available: get_logs, get_metrics, get_traces, exec_shell, submit"
        try:
            return str(handler(*call.args, **call.kwargs))
        except TypeError as exc:
            return f"Error: {call.api}: {exc}"

    def _check_namespace(self, namespace: str) -> str | None:
        if namespace != self.namespace:
            return "Error: Your service/namespace does not exist. Use kubectl to check."
        return None

    def get_logs(self, namespace: str, service: str) -> str:
        wrong = self._check_namespace(namespace)
        if wrong:
            return wrong
        if service not in self._locked(self.backend.workloads):
            return "Error: Your service/namespace does not exist. Use kubectl to check."
        now = self.backend.now
        lines = self._locked(lambda: self.backend.logs(service=service, since=now - 300.0, limit=200))
        return compress_lines([f"{line['level'].upper()} {line['message']}" for line in lines]) or "(no log lines)"

    def get_metrics(self, namespace: str, duration: int = 5) -> str:
        wrong = self._check_namespace(namespace)
        if wrong:
            return wrong
        window = f"{max(1, int(duration))}m"
        now = self.backend.now
        engine = PromQLEngine(self.backend.store)
        table: dict[str, dict[str, float]] = {}
        for title, query in metric_queries(window):
            result = self._locked(lambda q=query: engine.instant(q, now))
            for row in result if isinstance(result, list) else []:
                service = row["labels"].get("service_name", "")
                if service:
                    cell = table.setdefault(service, {})
                    cell[title] = cell.get(title, 0.0) + float(row["value"])
        titles = [t for t, _ in METRIC_COLUMNS]
        out = ["service".ljust(24) + "".join(t.rjust(12) for t in titles)]
        for service in sorted(table):
            out.append(service.ljust(24) + "".join(_cell(table[service].get(t)) for t in titles))
        path = self._export("metrics", self._metric_rows(engine, now, max(1, int(duration))))
        return "\n".join(out) + f"\n\nEvery series at 15 s steps over the last {max(1, int(duration))} minutes: " \
            f"read_metrics(\"{path}\")"

    def _metric_rows(self, engine: PromQLEngine, now: float, minutes: int) -> str:
        rows = ["timestamp,service,metric,value"]
        start = now - 60.0 * minutes
        for title, query in metric_queries("1m"):
            series = self._locked(lambda q=query: engine.range(q, start, now, 15.0))
            for entry in series:
                service = entry["labels"].get("service_name", "")
                for t, v in entry["values"] if service else ():
                    if v == v:
                        rows.append(f"{t:.0f},{service},{title},{v:.6g}")
        rows[1:] = sorted(rows[1:], key=lambda r: (float(r.split(",", 1)[0]), r))
        return "\n".join(rows)

    def _export(self, kind: str, text: str) -> str:
        """AIOpsLab writes exports to CSV files the agent then reads; here they are kept in the
        episode, under a path the answer names."""
        path = f"{kind}/{len(self._files) + 1}.csv"
        self._files[path] = text
        return path

    def get_traces(self, namespace: str, duration: int = 5) -> str:
        wrong = self._check_namespace(namespace)
        if wrong:
            return wrong
        now = self.backend.now
        since = now - 60.0 * max(1, int(duration))
        # the newest 500 for the export, the newest 50 of them in the table (both oldest first)
        traces = self._locked(lambda: self.backend.traces(since=since, limit=500))
        out = ["trace_id                          route                                  ms   error  services"]
        for tr in traces[-50:]:
            out.append(f"{tr['trace_id']}  {str(tr['route'])[:36]:36} {tr['duration_ms']:8.1f}  "
                       f"{'yes' if tr['error'] else 'no ':5}  {','.join(tr['services'])}")
        rows = ["timestamp,trace_id,service,operation,kind,duration_ms,error"]
        for tr in traces:
            record = self._locked(lambda i=tr["trace_id"]: self.backend.trace(i)) or {"spans": []}
            for span in record["spans"]:
                rows.append(f"{span['start']:.3f},{tr['trace_id']},{span['service']},{span['name']},{span['kind']},"
                            f"{span['duration_ms']:.3f},{int(span['status'] == 'STATUS_CODE_ERROR')}")
        path = self._export("traces", "\n".join(rows))
        return "\n".join(out) + f"\n\nEvery span of the last {max(1, int(duration))} minutes: read_traces(\"{path}\")"

    def read_file(self, file_path: str = "") -> str:
        text = self._files.get(str(file_path))
        if text is None:
            return f"error: '{file_path}' not found (paths come from get_metrics and get_traces)"
        return text

    def exec_shell(self, command: str, timeout: int = 30) -> str:
        for pattern, refusal in BLOCK_LIST:
            if pattern in command:
                return refusal
        try:
            argv = shlex.split(command)
            lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            operators = [word for word in lexer if word and set(word) <= SHELL_OPERATORS]
        except ValueError as exc:
            return f"Error: the command cannot be split into words: {exc}"
        if operators:
            return ("Error: exec_shell runs one kubectl command; pipes, redirections and command chaining "
                    f"({' '.join(operators)}) are not available")
        if not argv or argv[0] != "kubectl":
            return f"Error: exec_shell runs kubectl only; {argv[0] if argv else 'an empty command'!r} is not available"
        kubectl = shutil.which("kubectl")
        if kubectl is None or self.kubeconfig is None:
            return "Error: kubectl is not installed on this machine"
        try:
            done = subprocess.run([kubectl, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir),
                                   *argv[1:]], capture_output=True, text=True,
                                  timeout=min(float(timeout), KUBECTL_TIMEOUT_S), check=False)
        except subprocess.TimeoutExpired:
            return f"Error: the command timed out after {min(float(timeout), KUBECTL_TIMEOUT_S):g} s"
        output = (done.stdout + done.stderr).strip()
        if argv[1:2] == ["logs"]:
            output = compress_lines(output.splitlines())
        return output[:OUTPUT_LIMIT] or "(no output)"


#: The per-service columns of get_metrics (span metrics of the server and consumer side, cAdvisor
#: and kube-state-metrics per pod folded onto the workload).
METRIC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("req/s", 'sum by (service_name) (rate(traces_span_metrics_calls_total{{span_kind=~"SPAN_KIND_SERVER|SPAN_KIND_CONSUMER"}}[{w}]))'),
    ("errors", 'sum by (service_name) (rate(traces_span_metrics_calls_total{{span_kind=~"SPAN_KIND_SERVER|SPAN_KIND_CONSUMER",status_code="STATUS_CODE_ERROR"}}[{w}]))'
               ' / sum by (service_name) (rate(traces_span_metrics_calls_total{{span_kind=~"SPAN_KIND_SERVER|SPAN_KIND_CONSUMER"}}[{w}]))'),
    ("p95 ms", 'histogram_quantile(0.95, sum by (service_name, le) (rate(traces_span_metrics_duration_milliseconds_bucket{{span_kind=~"SPAN_KIND_SERVER|SPAN_KIND_CONSUMER"}}[{w}])))'),
    ("cpu", 'sum by (service_name) (label_replace(rate(container_cpu_usage_seconds_total[{w}]), "service_name", "$1", "pod", "(.+)-[^-]+-[^-]+"))'),
    ("memory MiB", 'sum by (service_name) (label_replace(container_memory_working_set_bytes, "service_name", "$1", "pod", "(.+)-[^-]+-[^-]+")) / 1048576'),
    ("restarts", 'sum by (service_name) (label_replace(kube_pod_container_status_restarts_total, "service_name", "$1", "pod", "(.+)-[^-]+-[^-]+"))'),
)


def metric_queries(window: str) -> list[tuple[str, str]]:
    return [(title, query.format(w=window)) for title, query in METRIC_COLUMNS]


def _cell(value: float | None) -> str:
    if value is None or value != value:
        return "-".rjust(12)
    return f"{value:12.3f}"


def compress_lines(lines: list[str]) -> str:
    """Runs of the same line folded into one with a count, as AIOpsLab's greedy_compress_lines
    keeps a flood of identical log lines from filling the agent's context."""
    out: list[str] = []
    last, count = None, 0
    for line in [*lines, None]:
        if line == last:
            count += 1
            continue
        if last is not None:
            out.append(last if count == 1 else f"{last}  (x{count})")
        last, count = line, 1
    return "\n".join(out)
