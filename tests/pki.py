"""A throw-away PKI for TLS tests: a CA, a server certificate for 127.0.0.1, and a client certificate.

Made with the `openssl` command line (the `cryptography` package is not a dependency of the project).
Keys are P-256, unencrypted PKCS#8 (`-----BEGIN PRIVATE KEY-----`), valid for two days.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Pki", "make_pki"]


@dataclass(frozen=True, slots=True)
class Pki:
    """The PEM files of one test PKI."""

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _key(name: str, cwd: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name, cwd=cwd)


def _signed(name: str, subject: str, extensions: str, cwd: Path) -> None:
    """Make `name.key` and `name.crt`, signed by the CA in `cwd`."""
    _key(f"{name}.key", cwd)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-sha256", "-extfile", f"{name}.ext", "-out", f"{name}.crt",
        cwd=cwd,
    )  # fmt: skip


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server certificate (127.0.0.1, localhost) and a client certificate to `directory`."""
    if shutil.which("openssl") is None:
        raise FileNotFoundError("the openssl command is needed to make test certificates")
    directory.mkdir(parents=True, exist_ok=True)
    _key("ca.key", directory)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=streamjoin test CA", "-days", "2",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        "-out", "ca.crt",
        cwd=directory,
    )  # fmt: skip
    common = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
    common += "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n"
    _signed(
        "server",
        "/CN=127.0.0.1",
        common + "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        directory,
    )
    _signed("client", "/CN=streamjoin", common + "extendedKeyUsage=clientAuth\n", directory)
    return Pki(
        ca_cert=directory / "ca.crt",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
