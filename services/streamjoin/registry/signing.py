"""Authenticate the registry's log: an HMAC-SHA256 of every record, keyed by `STREAMJOIN_REGISTRY_KEY`.

The log is a Kafka topic: anyone who can produce to it could otherwise write a stream or a query
that a restore turns into a running query. The control plane signs every record it appends (key,
registry version and value, a tombstone included) and a restore accepts only records whose MAC
matches (docs/registry.md, "Authentication"). The MAC travels in the record header `sj-mac`.

>>> from dataclasses import replace
>>> signer = LogSigner(b"k" * 32)
>>> entry = signer.sign(LogEntry.stream("p:", "orders", '{"name":"orders"}').at(3))
>>> signer.problem(entry) is None
True
>>> signer.problem(replace(entry, version=4))[0]  # a signed record replayed at another version
'bad_signature'
>>> signer.problem(LogEntry.tombstone("p:", "query", "q").at(5))[0]
'unsigned'
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace

from pydantic import SecretStr

from streamjoin.registry.log import LogEntry, RefusalReason
from streamjoin.settings import Settings

__all__ = ["MAC_HEADER", "REGISTRY_KEY_ENV", "LogSigner"]

MAC_HEADER = "sj-mac"
REGISTRY_KEY_ENV = "STREAMJOIN_REGISTRY_KEY"
_DOMAIN = b"streamjoin registry log v1\n"


class LogSigner:
    """Sign log entries and check their MACs with one secret key."""

    def __init__(self, key: bytes) -> None:
        """Use `key` (the bytes of `STREAMJOIN_REGISTRY_KEY`)."""
        self._key = key

    @classmethod
    def from_settings(cls, settings: Settings) -> LogSigner | None:
        """Return the signer of `settings.registry_key`, None when no key is set."""
        return cls.of(settings.registry_key)

    @classmethod
    def of(cls, key: SecretStr | None) -> LogSigner | None:
        """Return the signer of `key`, None for no key."""
        return cls(key.get_secret_value().encode()) if key is not None else None

    def sign(self, entry: LogEntry) -> LogEntry:
        """Return `entry` with its MAC (sign after `at`: the version is part of what is signed)."""
        return replace(entry, mac=self._mac(entry))

    def problem(self, entry: LogEntry) -> tuple[RefusalReason, str] | None:
        """Return why `entry` is not authentic (reason, detail), or None when its MAC matches."""
        if not entry.mac:
            return (
                "unsigned",
                f"it has no MAC (header {MAC_HEADER}; written before {REGISTRY_KEY_ENV} was set)",
            )
        if not hmac.compare_digest(entry.mac, self._mac(entry)):
            return "bad_signature", (
                f"its MAC does not match (written without {REGISTRY_KEY_ENV}, with another key, or altered)"
            )
        return None

    def _mac(self, entry: LogEntry) -> str:
        # One JSON array: key, version and value (null for a tombstone) cannot run into each other.
        signed = json.dumps([entry.key, entry.version, entry.value], ensure_ascii=True, separators=(",", ":"))
        return hmac.new(self._key, _DOMAIN + signed.encode(), hashlib.sha256).hexdigest()
