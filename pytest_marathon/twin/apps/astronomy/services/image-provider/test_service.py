"""Pinned against open-telemetry/opentelemetry-demo 2.2.0 src/image-provider/nginx.conf.template."""

from testing import TestContext

import service


def test_product_image_served():
    assert service.static(TestContext(), {"path": "/products/RoofBinoculars.jpg"})["status"] == 200


def test_missing_image_404():
    reply = service.static(TestContext(), {"path": "/products/nope.jpg"})
    assert reply["status"] == 404 and "404 Not Found" in reply["body"]
