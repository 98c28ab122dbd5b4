"""Code faults on a cluster (backends/fault_images.py): images are found in the user's registry
by the name `fault-images` lists, a scheduled code fault without its image is dropped and named,
and a release of the patch deploys the image.

The registry is the one thing here that cannot run on this machine, so a double on loopback
answers the Docker Registry HTTP API v2 manifest HEAD (distribution docs/spec/api.md: 200 with
`Docker-Content-Digest`, 404 `MANIFEST_UNKNOWN`); the cluster is the twin behind its Kubernetes
API, read through a kubeconfig as a real one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_marathon.apiserver.identity import OPERATOR
from pytest_marathon.apiserver.kubeconfig import write_kubeconfig
from pytest_marathon.apiserver.server import KubeApiServer
from pytest_marathon.backends import create_backend
from pytest_marathon.backends.fault_images import fault_image, fault_tag
from pytest_marathon.faults.backend_support import drop_unsupported
from pytest_marathon.faults.catalog import load_catalog
from pytest_marathon.faults.scenario import Scenario
from pytest_marathon.faults.schedule import Schedule, ScheduledFault

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed (the `test` extra)")

CODE = [e for e in load_catalog("boutique") if e.patch is not None]
TOKEN = "operator-token-for-image-tests"


class Registry:
    """Manifests by `name:tag`; every request is kept."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.requests: list[tuple[str, str, str]] = []
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                registry.requests.append(("HEAD", self.path, self.headers.get("Accept", "")))
                name, _, tag = self.path.removeprefix("/v2/").partition("/manifests/")
                if f"{name}:{tag}" in registry.held:
                    self.send_response(200)
                    self.send_header("Docker-Content-Digest", "sha256:" + "0" * 64)
                    self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                else:
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.host = f"127.0.0.1:{self.server.server_address[1]}"

    def hold(self, image: str) -> None:
        self.held.add(image.split("/", 1)[1])


@pytest.fixture
def cluster(tmp_path: Path) -> Any:
    twin = create_backend("boutique", 6)
    twin.advance_to(30.0)
    server = KubeApiServer(twin, operator_token=TOKEN)
    registry = Registry()
    # the operator's credential, as a harness's kubeconfig holds one (an agent's may not release)
    path = write_kubeconfig(tmp_path / "kubeconfig.yaml", server.url, twin.namespace, token=TOKEN, user=OPERATOR)
    backend = create_backend("boutique", 6, backend="kubernetes", kubeconfig=str(path),
                             prometheus_url="http://127.0.0.1:9", registry=f"{registry.host}/boutique")
    yield twin, backend, registry
    server.close()
    registry.server.shutdown()


def test_fault_images_lists_one_distinct_image_per_code_fault() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_marathon", "fault-images", "--app", "boutique",
                           "--registry", "registry.example:5000/boutique", "--json"],
                          capture_output=True, text=True, timeout=120, check=True)
    rows = json.loads(done.stdout)
    assert [r["entry"] for r in rows] == [e.id for e in CODE]
    assert len({r["image"] for r in rows}) == len(rows)
    for row, entry in zip(rows, CODE):
        assert row["image"] == f"registry.example:5000/boutique/{entry.target}:{fault_tag(entry.patch)}"
        assert row["patch"] == entry.patch and row["language"]


def test_a_code_fault_without_its_image_is_dropped_and_named(cluster: Any) -> None:
    _twin, backend, registry = cluster
    # the code fault a cluster can watch (its probe reads logs; the others send synthetic requests)
    [entry] = [e for e in CODE if e.probe["kind"] == "no_error_logs"]
    image = fault_image(backend.registry, entry.target, entry.patch)
    scenario = Scenario("images", "", 0.0, 600.0, 0.0, 1, 1.0, 1.0, 1.0, 1.0, 1)
    schedule = Schedule("boutique", scenario, 6, (ScheduledFault("f01", entry, 60.0, 300.0),))
    with pytest.warns(UserWarning, match=rf"{entry.id} \(needs its fault image {image}\)"):
        assert drop_unsupported(schedule, backend).faults == ()
    registry.hold(image)
    assert drop_unsupported(schedule, backend) is schedule
    assert all(accept.startswith("application/vnd.oci.image.index.v1+json") for _, _, accept in registry.requests)


def test_releasing_the_patch_deploys_its_fault_image_and_a_missing_one_changes_nothing(cluster: Any) -> None:
    twin, backend, registry = cluster
    entry = CODE[0]
    image = fault_image(backend.registry, entry.target, entry.patch)
    before = twin.artifact_value(f"image:{entry.target}")
    missing = backend.release(entry.target, patch=entry.patch, change_cause="Release 2.4")
    assert not missing.ok and f"no image {image} in the registry" in missing.message
    assert twin.artifact_value(f"image:{entry.target}") == before
    registry.hold(image)
    done = backend.release(entry.target, patch=entry.patch, change_cause="Release 2.4")
    assert done.ok, done.message
    assert twin.artifact_value(f"image:{entry.target}") == image
