"""Scanning Docker hosts for hubgrid's images: the IO edge of the registry.

A session image carries the label ``ai.hubgrid.session-image``, an image
for inference replicas ``ai.hubgrid.inference-image`` (``images.MARKERS``);
each tag of either is one registry entry. docker-py's calls block, so each host is
asked in a worker thread; a host that does not answer is reported, never
raised. ``registry.apply_scan`` records the result.
"""

from __future__ import annotations

import asyncio
from typing import Callable, Iterable
from urllib.parse import urlparse

from ..core.images import MARKERS

#: URL schemes docker-py speaks; other node backends (e.g. Slurm) are not scanned
DOCKER_SCHEMES = ("unix", "tcp", "http", "https", "ssh")


def docker_hosts(node_urls: Iterable[str], configured: Iterable[str]) -> list[str]:
    """The Docker URLs to scan: the nodes' backend URLs and the configured
    ones, each once, in that order; URLs of other backends are left out."""
    out: list[str] = []
    for url in [*node_urls, *configured]:
        url = url.strip()
        if url and urlparse(url).scheme in DOCKER_SCHEMES and url not in out:
            out.append(url)
    return out


def session_images(client) -> list[dict]:
    """``[{"name", "labels"}]``: every tag of the images carrying a marker
    label, each once, as the low-level docker-py client lists them
    (blocking). The engine ANDs the labels of one filter: one call per marker."""
    out: dict[str, dict] = {}
    for marker in MARKERS:
        for img in client.images(filters={"label": marker}):
            labels = img.get("Labels") or {}
            if marker not in labels:  # the engine filters; this is belt and braces
                continue
            for tag in img.get("RepoTags") or []:
                if tag != "<none>:<none>":
                    out.setdefault(tag, {"name": tag, "labels": dict(labels)})
    return list(out.values())


def docker_client(url: str, timeout: float):
    """A docker-py low-level client of the engine at ``url`` (blocking: it
    asks the engine for its API version)."""
    import docker

    return docker.APIClient(base_url=url, version="auto", timeout=timeout)


ClientFactory = Callable[[str, float], object]


def _describe(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 500 else text[:500] + "..."


async def scan(urls: list[str], make_client: ClientFactory = docker_client,
               timeout: float = 10.0) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """Ask every host at once; ``(found by url, error by url)``."""

    def ask(url: str) -> list[dict]:
        client = make_client(url, timeout)
        try:
            return session_images(client)
        finally:
            close = getattr(client, "close", None)
            if close is not None:
                close()

    async def one(url: str):
        try:
            return url, await asyncio.to_thread(ask, url), None
        except Exception as e:  # any failure of one host is that host's report
            return url, None, _describe(e)

    found: dict[str, list[dict]] = {}
    errors: dict[str, str] = {}
    for url, images, error in await asyncio.gather(*(one(u) for u in urls)):
        if error is None:
            found[url] = images
        else:
            errors[url] = error
    return found, errors
