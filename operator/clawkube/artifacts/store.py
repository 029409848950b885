"""A small S3 store: put/get/exists/list with bounded retries and exponential backoff.

Credentials come from the config (e.g. read from a Kubernetes Secret) or, when unset, from boto3's usual
chain (AWS_* env, instance/IRSA role). `endpoint` points at any S3-compatible server (MinIO, moto).
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel

from .uri import S3Uri, join_key

T = TypeVar("T")
_NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
_RETRYABLE_CLIENT = {"500", "502", "503", "504", "RequestTimeout", "SlowDown", "InternalError",
                     "ServiceUnavailable", "Throttling", "ThrottlingException", "RequestTimeTooSkewed"}


class ArtifactError(RuntimeError):
    """An S3 operation failed for good (after retries, or with a non-retryable error)."""


class StoreConfig(BaseModel):
    bucket: str
    prefix: str = ""
    endpoint: Optional[str] = None
    region: Optional[str] = None
    access_key_id: Optional[str] = None
    secret_access_key: Optional[str] = None
    session_token: Optional[str] = None


class S3Store:
    def __init__(self, config: StoreConfig, attempts: int = 4, base_delay: float = 0.2,
                 sleep: Callable[[float], None] = time.sleep, client: Any = None):
        self.config = config
        self.attempts = max(1, attempts)
        self.base_delay = base_delay
        self._sleep = sleep
        self._client = client or boto3.session.Session().client(
            "s3",
            endpoint_url=config.endpoint,
            region_name=config.region or "us-east-1",
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            aws_session_token=config.session_token,
            config=Config(retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30,
                          s3={"addressing_style": "path"}),
        )

    # keys are relative to config.prefix
    def key(self, *parts: str) -> str:
        return join_key(self.config.prefix, *parts)

    def uri(self, *parts: str) -> str:
        return str(S3Uri(self.config.bucket, self.key(*parts)))

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        self._retry(f"put s3://{self.config.bucket}/{key}", lambda: self._client.put_object(
            Bucket=self.config.bucket, Key=key, Body=data, ContentType=content_type))
        return str(S3Uri(self.config.bucket, key))

    def put_json(self, key: str, obj: Any) -> str:
        return self.put(key, json.dumps(obj, indent=2, sort_keys=True).encode(), "application/json")

    def get(self, key: str) -> bytes:
        resp = self._retry(f"get s3://{self.config.bucket}/{key}",
                           lambda: self._client.get_object(Bucket=self.config.bucket, Key=key))
        return resp["Body"].read()

    def exists(self, key: str) -> bool:
        try:
            self._retry(f"head s3://{self.config.bucket}/{key}",
                        lambda: self._client.head_object(Bucket=self.config.bucket, Key=key))
            return True
        except _Missing:
            return False

    def list(self, prefix: str) -> list[str]:
        keys: list[str] = []
        token: Optional[str] = None
        while True:
            kwargs = {"Bucket": self.config.bucket, "Prefix": prefix}
            if token:
                kwargs["ContinuationToken"] = token
            resp = self._retry(f"list s3://{self.config.bucket}/{prefix}",
                               lambda: self._client.list_objects_v2(**kwargs))
            keys += [o["Key"] for o in resp.get("Contents", [])]
            if not resp.get("IsTruncated"):
                return keys
            token = resp.get("NextContinuationToken")

    def upload_grant(self, prefix: str, seconds: int) -> dict[str, Any]:
        """A presigned POST that lets its holder write any key under `prefix`, and nothing else, for `seconds`
        (`{url, fields, prefix}`: POST a multipart form of `fields`, `key` = prefix + path, then `file`)."""
        try:
            post = self._client.generate_presigned_post(self.config.bucket, prefix + "${filename}",
                                                        Conditions=[["starts-with", "$key", prefix]],
                                                        ExpiresIn=seconds)
        except (BotoCoreError, ClientError) as e:
            raise ArtifactError(f"presign an upload to s3://{self.config.bucket}/{prefix}: {e}") from e
        return {"url": post["url"], "fields": post["fields"], "prefix": prefix}

    def read_grants(self, prefix: str, seconds: int) -> dict[str, str]:
        """Presigned GET URLs of every object under `prefix`, keyed by their path relative to it."""
        out: dict[str, str] = {}
        for key in self.list(prefix):
            try:
                out[key[len(prefix):]] = self._client.generate_presigned_url(
                    "get_object", Params={"Bucket": self.config.bucket, "Key": key}, ExpiresIn=seconds)
            except (BotoCoreError, ClientError) as e:
                raise ArtifactError(f"presign a read of s3://{self.config.bucket}/{key}: {e}") from e
        return out

    def _retry(self, what: str, call: Callable[[], T]) -> T:
        last: Exception | None = None
        for i in range(self.attempts):
            try:
                return call()
            except ClientError as e:
                code = str(e.response.get("Error", {}).get("Code", ""))
                if code in _NOT_FOUND:
                    raise _Missing(what) from e
                if code not in _RETRYABLE_CLIENT:
                    raise ArtifactError(f"{what}: {code or e}") from e
                last = e
            except BotoCoreError as e:  # connection refused, timeouts, ...
                last = e
            if i + 1 < self.attempts:
                self._sleep(self.base_delay * (2 ** i))
        raise ArtifactError(f"{what}: failed after {self.attempts} attempts: {last}")


class _Missing(ArtifactError):
    """The object does not exist (not retried)."""
