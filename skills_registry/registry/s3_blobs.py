"""Archives in S3-compatible object storage (AWS S3, MinIO, R2, Ceph) through boto3.

Keys are content addresses, ``<prefix>/<aa>/<sha256>``, so a key never changes meaning and a
CDN may cache it forever. An upload sends its SHA-256 (``ChecksumSHA256``): the server refuses
bytes that do not hash to it, and ``put`` then reads the object's size back, so by the time the
publish writes its version row the archive is known to be stored whole. Configuration is boto3's
own: ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``.

A key never changes meaning, so small archives read once are kept in a bounded in-memory cache
(popular skills are downloaded far more often than published); nothing can make it stale.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skills_registry.registry.errors import IntegrityError, NotFound, RegistryUnavailable

_SHA = re.compile(r"[0-9a-f]{64}")
CACHE_BYTES = 64 * 1024 * 1024
CACHE_ITEM_BYTES = 1024 * 1024


def _client() -> Any:
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"max_attempts": 5, "mode": "standard"},
        max_pool_connections=32,
        s3={"addressing_style": "path"},
    )
    return boto3.session.Session().client("s3", config=config)


class S3Blobs:
    """Content-addressed archives under ``s3://bucket/prefix``."""

    def __init__(self, bucket: str, prefix: str = "", client: Any = None) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client if client is not None else _client()
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    def _key(self, sha256: str) -> str:
        if not _SHA.fullmatch(sha256):
            raise NotFound(f"no blob {sha256!r}")
        return "/".join(p for p in (self.prefix, sha256[:2], sha256) if p)

    def _errors(self) -> tuple[type[Exception], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data)
        sha = digest.hexdigest()
        key = self._key(sha)
        checksum = base64.b64encode(digest.digest()).decode()
        try:  # content-addressed: writing the same bytes again is harmless, no need to look first
            answer = self.client.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=data,
                ContentType="application/gzip",
                ChecksumSHA256=checksum,
                Metadata={"sha256": sha},
            )
        except self._errors() as exc:
            raise RegistryUnavailable(f"object storage refused the archive: {exc}") from None
        # A server that checked our SHA-256 says so in its answer; otherwise read the size back.
        if answer.get("ChecksumSHA256") != checksum and self.size(sha) != len(data):
            raise IntegrityError(f"object storage did not keep archive {sha} whole")
        return sha

    def get(self, sha256: str) -> bytes:
        with self._lock:
            data = self._cache.get(sha256)
            if data is not None:
                self._cache.move_to_end(sha256)
                return data
        data = b"".join(self.stream(sha256))
        if hashlib.sha256(data).hexdigest() != sha256:
            raise IntegrityError(f"object storage returned other bytes for archive {sha256}")
        if len(data) <= CACHE_ITEM_BYTES:
            with self._lock:
                if sha256 not in self._cache:
                    self._cache[sha256] = data
                    self._cached_bytes += len(data)
                while self._cached_bytes > CACHE_BYTES:
                    _, dropped = self._cache.popitem(last=False)
                    self._cached_bytes -= len(dropped)
        return data

    def path(self, sha256: str) -> Path | None:
        return None

    def size(self, sha256: str) -> int | None:
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(sha256))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise RegistryUnavailable(f"object storage: {exc}") from None
        return int(head["ContentLength"])

    def stream(self, sha256: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        from botocore.exceptions import ClientError

        args: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(sha256)}
        if start or end is not None:
            args["Range"] = f"bytes={start}-{'' if end is None else end}"
        try:
            body = self.client.get_object(**args)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                raise NotFound(f"no blob {sha256}") from None
            raise RegistryUnavailable(f"object storage: {exc}") from None
        try:
            yield from body.iter_chunks(65536)
        finally:
            body.close()

    def presigned_url(self, sha256: str, filename: str) -> str | None:
        url: str = self.client.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": self.bucket,
                "Key": self._key(sha256),
                "ResponseContentDisposition": f'attachment; filename="{filename}"',
            },
            ExpiresIn=3600,
        )
        return url

    def unreferenced_candidates(self, older_than: float) -> Iterator[str]:
        cutoff = time.time() - older_than
        paginator = self.client.get_paginator("list_objects_v2")
        prefix = f"{self.prefix}/" if self.prefix else ""
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                name = item["Key"].rsplit("/", 1)[-1]
                if _SHA.fullmatch(name) and item["LastModified"].timestamp() < cutoff:
                    yield name

    def delete(self, sha256: str) -> None:
        with self._lock:
            dropped = self._cache.pop(sha256, None)
            self._cached_bytes -= len(dropped or b"")
        self.client.delete_object(Bucket=self.bucket, Key=self._key(sha256))

    def ping(self) -> None:
        self.client.head_bucket(Bucket=self.bucket)
