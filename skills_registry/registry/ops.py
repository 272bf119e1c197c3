"""What an operator's load balancer and dashboards ask of each instance.

``/healthz`` answers while the process serves at all (liveness); ``/readyz`` also reaches the
database and the bucket (readiness: a load balancer stops routing to an instance that cannot).
``/metrics`` is Prometheus text: request latency per route (the endpoint's name, so cardinality
stays bounded), publishes and downloads. Each request is one JSON line on the
``kiln.registry.access`` logger (stderr when the server enables access logs). A failed readiness
check answers with the failure's kind only (``error: OperationalError``): its text can name hosts,
users and buckets, and the probe is unauthenticated; the text goes to the ``kiln.registry.ready``
logger (stderr).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS_LOG = logging.getLogger("kiln.registry.access")
READY_LOG = logging.getLogger("kiln.registry.ready")
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """One Prometheus registry per app, so several apps in one process never collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "kiln_registry_request_seconds",
            "Request latency by route",
            ["method", "route", "status"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.publishes = Counter(
            "kiln_registry_publishes", "Versions published", registry=self.registry
        )
        self.publish_failures = Counter(
            "kiln_registry_publish_rejections",
            "Publishes refused",
            ["status"],
            registry=self.registry,
        )
        self.downloads = Counter(
            "kiln_registry_downloads", "Archive downloads", ["mode"], registry=self.registry
        )

    def render(self) -> Response:
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


# Metric labels are kept for ever, and HTTP lets a client send any token as its method.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})


class Observe:
    """ASGI middleware: time every request, count it by route and log it as one JSON line."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500, "bytes": 0}

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            elif message["type"] == "http.response.body":
                status["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            elapsed = time.perf_counter() - start
            endpoint = scope.get("endpoint")
            route = getattr(endpoint, "__name__", None) or "unmatched"
            code = status["code"]
            method = scope["method"] if scope["method"] in _METHODS else "other"  # any token
            self.metrics.latency.labels(method, route, str(code)).observe(elapsed)
            if route == "publish":
                if code == 201:
                    self.metrics.publishes.inc()
                else:
                    self.metrics.publish_failures.labels(str(code)).inc()
            if ACCESS_LOG.isEnabledFor(logging.INFO):
                client = scope.get("client") or ("", 0)
                ACCESS_LOG.info(
                    json.dumps(
                        {
                            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "method": scope["method"],
                            "path": scope["path"],
                            "route": route,
                            "status": code,
                            "bytes": status["bytes"],
                            "ms": round(elapsed * 1000, 2),
                            "client": client[0],
                        }
                    )
                )


def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def readyz(request: Request) -> Response:
    registry: Any = request.app.state.registry
    checks: dict[str, str] = {}
    for name, target in (("database", registry.store), ("blobs", registry.blobs)):
        try:
            target.ping()
            checks[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready", with its kind
            checks[name] = f"error: {type(exc).__name__}"
            READY_LOG.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status_code=200 if ready else 503,
    )


def metrics(request: Request) -> Response:
    registry: Any = request.app.state.registry
    rendered: Response = registry.metrics.render()
    return rendered


def enable_access_log() -> None:
    """JSON lines on stderr (the registry server's only log stream)."""
    if not ACCESS_LOG.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        ACCESS_LOG.addHandler(handler)
    ACCESS_LOG.setLevel(logging.INFO)
    ACCESS_LOG.propagate = False
