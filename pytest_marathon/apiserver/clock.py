"""The twin's clock while it serves: virtual time follows the wall clock at a chosen speed.

`--speed X` moves X virtual seconds per wall second (0: time moves only through the clock
endpoint, which is how tests and a Kubernetes backend step it deterministically). Each step
takes the server's lock, so no request sees a tick half done. A step through the endpoint
moves the anchor: the driver never pulls time back, it goes on from wherever time is.
"""

from __future__ import annotations

import threading
import time

from pytest_marathon.apiserver.server import KubeApiServer

_POLL_SECONDS = 0.2


class ClockDriver:
    def __init__(self, server: KubeApiServer, speed: float) -> None:
        if speed < 0:
            raise ValueError(f"--speed must be >= 0 virtual seconds per wall second, got {speed}")
        self.server = server
        self.speed = speed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.speed == 0:
            return
        self._thread = threading.Thread(target=self._run, name="twin-clock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tick = self.server.backend.tick_seconds
        anchor_virtual, anchor_wall = self.server.now, time.monotonic()
        while not self._stop.wait(_POLL_SECONDS):
            target = anchor_virtual + self.speed * (time.monotonic() - anchor_wall)
            now = self.server.now
            if now > target:  # the endpoint moved time ahead: follow from there
                anchor_virtual, anchor_wall = now, time.monotonic()
                continue
            if target >= now + tick:
                self.server.advance_to(target)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
