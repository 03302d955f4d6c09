"""The production TLS reverse proxy of the annotation app (workflow/resources/annotation/nginx.conf, Debian's
nginx) for the tests: rendered for an unprivileged run under a work directory, with a self-signed
certificate, in front of an app server started by tests/support/annotation_server.py."""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from support.annotation_server import free_port, terminate, wait_listening

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "workflow/resources/annotation/nginx.conf"
NGINX = Path("/usr/sbin/nginx")
PLACEHOLDER = re.compile(r"@[A-Z_]+@")


def render(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``@NAME@`` replaced by ``values[NAME]``; a placeholder left without a value,
    or a value for no placeholder, is an error (the template and its users must agree)."""
    unused = [name for name in values if f"@{name}@" not in template]
    for name, value in values.items():
        template = template.replace(f"@{name}@", value)
    left = sorted(set(PLACEHOLDER.findall(template)))
    if left or unused:
        raise ValueError(f"{TEMPLATE}: placeholders without a value {left}, "
                         f"values without a placeholder {unused}")
    return template


class TlsProxy:
    """nginx with the production template in front of the app on ``127.0.0.1:upstream_port``, listening
    with TLS on a free port of 127.0.0.1 and connecting to the app from ``proxy_bind``.

    Everything it writes (config, certificate, pid, temporary files, logs) is under ``workdir``; it runs as
    the current user (as root, its workers too: the work directory need not be readable by anyone else).
    :meth:`start` returns once the TLS port accepts; :meth:`stop` ends nginx (also a context manager)."""

    def __init__(self, upstream_port: int, workdir, proxy_bind: str = "127.0.0.2"):
        self.upstream_port, self.proxy_bind = upstream_port, proxy_bind
        self.workdir = Path(workdir)
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.cert, self.key = self.workdir / "cert.pem", self.workdir / "key.pem"
        self.conf = self.workdir / "nginx.conf"
        self.access_log = self.workdir / "logs/access.log"
        self.error_log = self.workdir / "logs/error.log"
        self.output = self.workdir / "nginx.out"  # nginx's own stdout and stderr (start-up problems)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def _certificate(self) -> None:
        """A self-signed certificate for 127.0.0.1 and localhost, valid two days (the ``openssl`` CLI)."""
        if shutil.which("openssl") is None:
            pytest.fail("the proxy tests need the openssl command: apt-get install openssl")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                        "-keyout", str(self.key), "-out", str(self.cert)],
                       check=True, capture_output=True, timeout=60)
        self.key.chmod(0o600)

    def start(self, timeout: float = 30) -> "TlsProxy":
        if not NGINX.exists():
            pytest.fail(f"the proxy tests need Debian's nginx ({NGINX}): apt-get install nginx "
                        "(make test installs it when run as root)")
        for sub in ("logs", "tmp"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        if not self.cert.exists():
            self._certificate()
        self.port = free_port()
        user = f"{pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name}"
        self.conf.write_text(render(TEMPLATE.read_text(), {
            "LISTEN": f"127.0.0.1:{self.port}", "SERVER_NAME": "127.0.0.1", "CERT": str(self.cert),
            "CERT_KEY": str(self.key), "UPSTREAM": f"127.0.0.1:{self.upstream_port}",
            "PROXY_BIND": self.proxy_bind, "LOG_DIR": str(self.workdir / "logs"), "PREFIX": str(self.workdir),
            "USER": user}))
        with open(self.output, "ab") as out:
            self.proc = subprocess.Popen([str(NGINX), "-p", str(self.workdir), "-c", str(self.conf),
                                          "-e", str(self.error_log), "-g", "daemon off;"],
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        def failed():
            self.stop()
            raise AssertionError(f"nginx did not start:\n{self.output.read_text()}"
                                 f"{self.error_log.read_text() if self.error_log.exists() else ''}")

        wait_listening(self.proc, self.port, timeout, failed)
        return self

    def stop(self) -> None:
        """Fast shutdown (SIGTERM: nginx closes its connections and exits; SIGKILL after 10 s)."""
        terminate(self.proc)

    def directive(self, name: str) -> str:
        """The value of a directive in the rendered configuration (its first occurrence), e.g. the
        client_header_timeout the tests wait for."""
        found = re.search(rf"^\s*{name}\s+([^;]+);", self.conf.read_text(), re.M)
        if found is None:
            raise KeyError(f"{self.conf} has no {name}")
        return found.group(1).strip()

    def tls_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts this proxy's certificate only."""
        return ssl.create_default_context(cafile=str(self.cert))

    def __enter__(self) -> "TlsProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
