"""Keypairs: generation and verification of API keys.

The secret is shown once at creation; only its SHA-256 is stored. Secrets are
256 random bits, so a fast hash is enough (no password stretching needed),
and comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

ACCESS_KEY_PREFIX = "HG"


def new_keypair() -> tuple[str, str]:
    access_key = ACCESS_KEY_PREFIX + secrets.token_hex(9).upper()
    secret = secrets.token_urlsafe(32)
    return access_key, secret


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


#: compared against when an access key is unknown (no secret hashes to it)
DUMMY_HASH = "0" * 64


def secret_matches(secret: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), secret_hash)


def parse_keypair_header(value: str) -> tuple[str, str] | None:
    """``Authorization: Keypair ACCESS_KEY:SECRET`` -> (access, secret)."""
    scheme, _, rest = value.partition(" ")
    if scheme.lower() != "keypair":
        return None
    access_key, sep, secret = rest.strip().partition(":")
    if not sep or not access_key or not secret:
        return None
    return access_key, secret
