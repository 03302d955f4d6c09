"""The annotation app behind its production TLS reverse proxy (workflow/resources/annotation/nginx.conf,
Debian's nginx, rendered by tests/support/annotation_proxy.py): the real server (``python -m heart.annotation serve``)
on 127.0.0.1, nginx with a self-signed certificate in front of it, connecting from 127.0.0.2.

Checked: pages and answers work over TLS through the proxy; no log of the proxy holds a link's token, a
participant's id or a query string; a flood from one address is answered 429 by nginx while another address
is served; half-open connections are closed after client_header_timeout and do not stop anyone being served;
forwarded headers are believed from the proxy only. Everyone here is SYNTHETIC.

Needs the apt package nginx (`make test` installs it when run as root) and the openssl command.
"""

from __future__ import annotations

import http.client
import http.server
import re
import selectors
import socket
import ssl
import threading
import time

import pandas as pd
import pytest
import requests

from support.annotation_proxy import TlsProxy
from support.annotation_server import AnnotationServer
from support.annotation_server import free_port, synthetic_rating_tasks
from heart.annotation import crowd, db as store_db, guard, links, store
from heart.annotation.__main__ import _links

pytestmark = [pytest.mark.e2e]

NONCE = re.compile(r'name="nonce" value="([^"]+)"')
PROXY_BIND = "127.0.0.2"   # nginx connects to the app from here (proxy_bind)
OTHER_CLIENT = "127.0.0.3"  # a second client address (any 127.0.0.0/8 address is this machine's)
SEED = 5


def synthetic_tasks() -> pd.DataFrame:
    """Two synthetic items, two model replies and the original each: their 6 pairs, each to 2 of 3 raters."""
    return synthetic_rating_tasks(raters=3, seed=SEED)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A store of three raters: {"db", "paths" (person -> link path), "study_path" (the raters' crowd entry
    link)}."""
    tmp = tmp_path_factory.mktemp("proxied-study")
    db = tmp / "annotation.sqlite"
    store.create(db)
    conn = store_db.connect(db)
    try:
        store.load_tasks(conn, synthetic_tasks())
    finally:
        conn.close()
    return {"db": db, "paths": {person: path for person, _, path in _links(db, "")},
            "study_path": crowd.study_links(links.read_key(db))["rater"]}


@pytest.fixture
def app(study, tmp_path):
    """The real app server over the study's store, trusting forwarded headers from the proxy's address only
    (``serve --proxy 127.0.0.2``); a fresh process for each test (fresh rate-limit buckets in the app). The
    study's dict plus "server"."""
    server = AnnotationServer(study["db"], log=tmp_path / "server.log",
                              serve_args=["--proxy", PROXY_BIND]).start()
    try:
        yield {**study, "server": server}
    finally:
        server.kill()


@pytest.fixture
def proxy(app, tmp_path):
    """A fresh nginx in front of the app (fresh logs and rate-limit counters for each test)."""
    with TlsProxy(int(app["server"].url.rsplit(":", 1)[1]), tmp_path / "proxy", PROXY_BIND) as started:
        yield started


def https(proxy: TlsProxy) -> requests.Session:
    """A client session that trusts the proxy's certificate only (and no environment: REQUESTS_CA_BUNDLE
    would replace ``verify``, an HTTPS_PROXY would take the requests elsewhere)."""
    session = requests.Session()
    session.trust_env = False
    session.verify = str(proxy.cert)
    return session


def token(path: str) -> str:
    return path.rsplit("/", 1)[1]


def gets_from(source: str, base: str, path: str, n: int = 1, headers=None,
              context: ssl.SSLContext | None = None) -> tuple[list[int], float]:
    """(statuses, seconds) of ``n`` GETs of ``path`` over one keep-alive connection to ``base`` (an
    http:// or https:// address; ``context`` for the latter) from the client address ``source``."""
    host, port = base.split("://")[1].rsplit(":", 1)
    if base.startswith("https:"):
        conn = http.client.HTTPSConnection(host, int(port), context=context, source_address=(source, 0),
                                           timeout=10)
    else:
        conn = http.client.HTTPConnection(host, int(port), source_address=(source, 0), timeout=10)
    statuses = []
    try:
        start = time.monotonic()
        for _ in range(n):
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            response.read()
            statuses.append(response.status)
        return statuses, time.monotonic() - start
    finally:
        conn.close()


def answers_of(db, person: str) -> int:
    conn = store_db.connect(db)
    try:
        return int(store.answers_frame(conn)["person_id"].eq(person).sum())
    finally:
        conn.close()


def test_pages_and_answers_work_over_tls_through_the_proxy(app, proxy):
    """A rater's page, its answer (with the page's nonce and the Origin a browser sends) and the next page,
    all over TLS through nginx; the app's security headers pass through, nginx adds HSTS and names no
    version; plain HTTP and a foreign Host are not served."""
    path = app["paths"]["rater-01"]
    session = https(proxy)
    before = answers_of(app["db"], "rater-01")
    page = session.get(proxy.url + path, timeout=10)
    assert page.status_code == 200, page.text[:500]
    assert page.headers["Server"] == "nginx"  # server_tokens off
    assert page.headers["Strict-Transport-Security"].startswith("max-age=")
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    nonce = NONCE.search(page.text).group(1)
    posted = session.post(f"{proxy.url}{path}/answer", timeout=10, allow_redirects=False,
                          headers={"Origin": proxy.url},  # the app compares it with the Host nginx passes on
                          data={"nonce": nonce, "choice": "2", "rationale": "warmer and more specific"})
    assert posted.status_code == 303, posted.text[:500]
    assert posted.headers["Location"] == path
    following = session.get(proxy.url + posted.headers["Location"], timeout=10)
    assert following.status_code == 200
    assert NONCE.search(following.text).group(1) != nonce  # the next task's page
    assert answers_of(app["db"], "rater-01") == before + 1

    plain = session.get(f"http://127.0.0.1:{proxy.port}{path}", timeout=10)
    assert plain.status_code == 400 and NONCE.search(plain.text) is None  # nginx's "plain HTTP to HTTPS port"
    foreign = session.get(proxy.url + path, headers={"Host": "elsewhere.example"}, timeout=10)
    assert foreign.status_code == 421 and NONCE.search(foreign.text) is None


def test_no_log_of_the_proxy_holds_a_token_a_participant_or_a_query(app, proxy, tmp_path):
    """Pages of a rater, the coordinator and the crowd entry link with a participant's id in its query, also
    the requests that go wrong (an unknown study link, a mistyped link, a line too long, plain HTTP, a foreign
    Host, the app down -- whose messages nginx writes at `error` level, request line included): the access
    and error logs hold their redacted paths and statuses, never a token, the participant's id or a query."""
    rater, coordinator, entry = app["paths"]["rater-02"], app["paths"]["coordinator"], app["study_path"]
    unknown_study, participant = "St0dyT0kenSecretXyz", "abc123"
    query = f"PROLIFIC_PID={participant}&STUDY_ID=study-777&SESSION_ID=session-888"
    session = https(proxy)

    def get(path, **kwargs):
        return session.get(proxy.url + path, timeout=10, allow_redirects=False, **kwargs)

    page = get(rater)
    assert page.status_code == 200
    assert session.post(f"{proxy.url}{rater}/answer", timeout=10, allow_redirects=False,
                        data={"nonce": NONCE.search(page.text).group(1), "choice": "4",
                              "rationale": "B listens better"}).status_code == 303
    assert get(coordinator).status_code == 200
    entered = get(f"{entry}?{query}")  # provisions the first free rater, or says the study is full
    assert entered.status_code in (303, 409), entered.text[:500]
    if entered.status_code == 303:
        assert get(entered.headers["Location"]).status_code == 200
    assert get(f"/s/{unknown_study}/rater?{query}").status_code == 404
    assert get(f"{rater}?{query}").status_code == 200
    assert get("/p" + token(rater)).status_code == 404          # a mistyped link
    assert get(rater + "x" * 5000).status_code == 414            # above large_client_header_buffers
    assert get(rater, headers={"Host": "elsewhere.example"}).status_code == 421
    assert session.get(f"http://127.0.0.1:{proxy.port}{rater}?{query}", timeout=10).status_code == 400
    with TlsProxy(free_port(), tmp_path / "app-down", PROXY_BIND) as app_down:  # nothing listens there
        assert https(app_down).get(f"{app_down.url}{rater}?{query}", timeout=30).status_code == 502
    proxy.stop()  # the logs are read once nginx has written every line

    secrets = [token(path) for path in (*app["paths"].values(), entry)] + [
        unknown_study, participant, "PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "study-777", "session-888"]
    logs = {log: log.read_text() for log in (proxy.access_log, proxy.error_log, proxy.output,
                                             app_down.access_log, app_down.error_log, app_down.output)}
    for log, text in logs.items():
        leaked = [secret for secret in secrets if secret in text]
        assert not leaked, f"{log} holds {leaked}:\n{text}"
        assert "?" not in text and "&" not in text, f"{log} holds a query string:\n{text}"
    access = logs[proxy.access_log]
    for line in ('"GET /p/-" 200', '"POST /p/-/answer" 303', '"GET /c/-" 200', '"GET /s/-" ',
                 '"GET /s/-/rater" 404', '"GET /(other)" 404', '"GET /p/-" 421', '" 414 ', '" 400 '):
        assert line in access, f"no {line} in the access log:\n{access}"
    assert '"GET /p/-" 502' in logs[app_down.access_log], logs[app_down.access_log]


def test_a_flood_from_one_address_is_cut_off_by_nginx_while_another_address_is_served(app, proxy):
    """300 rapid GETs of one link from 127.0.0.1: nginx passes on at most its burst (40) and rate (20/s) and
    answers the rest 429 itself (the app, which has its own per-link limit, never sees them); a person at
    another address is served at once meanwhile; the app writes nothing per request."""
    path = app["paths"]["rater-01"]
    session = https(proxy)
    start = time.monotonic()
    statuses = [session.get(proxy.url + path, timeout=10).status_code for _ in range(300)]
    elapsed = time.monotonic() - start
    (other,), other_seconds = gets_from(OTHER_CLIENT, proxy.url, app["paths"]["rater-02"],
                                        context=proxy.tls_context())
    proxy.stop()  # every line written
    lines = proxy.access_log.read_text().splitlines()
    flood = [line for line in lines if line.split()[1] == "127.0.0.1"]
    by_nginx = [line for line in flood if line.endswith(" - -") and '" 429 ' in line]
    reached_app = [line for line in flood if not line.endswith(" - -")]
    print(f"\nflood: 300 GETs in {elapsed:.2f} s: {statuses.count(200)} served, "
          f"{statuses.count(429)} got 429 "
          f"({len(by_nginx)} from nginx, {len(reached_app)} passed on to the app); "
          f"the other address: {other} in {other_seconds * 1000:.0f} ms")
    assert set(statuses) <= {200, 429} and statuses.count(429) > 0, statuses
    assert len(flood) == 300 and len(by_nginx) + len(reached_app) == 300
    allowed = 1 + 40 + 20 * elapsed  # the first request, the burst, the rate over the flood's duration
    assert len(reached_app) <= allowed + 1, (len(reached_app), allowed)
    assert other == 200 and other_seconds < 1.0
    assert any(line.split()[1] == OTHER_CLIENT and '" 200 ' in line for line in lines), lines[-3:]
    assert app["server"].log.stat().st_size < 4096, app["server"].log.read_text()[-2000:]


def test_half_open_connections_are_closed_after_the_header_timeout_and_block_no_one(app, proxy):
    """200 connections that send part of a request line and then nothing (half over TLS, half plain TCP):
    a normal request is served meanwhile, and nginx closes each one client_header_timeout after it was
    opened (not before: a slow client gets that long), within a few seconds' slack."""
    timeout_s = float(proxy.directive("client_header_timeout").rstrip("s"))
    context = proxy.tls_context()
    opened = []
    for i in range(200):
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        if i % 2:
            sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
        sock.sendall(b"GET /p/")
        sock.setblocking(False)
        opened.append((sock, time.monotonic()))
    (status,), seconds = gets_from("127.0.0.1", proxy.url, app["paths"]["rater-02"], context=context)
    assert status == 200 and seconds < 2.0, (status, seconds)

    closed_after = {}
    with selectors.DefaultSelector() as selector:
        for n, (sock, _) in enumerate(opened):
            selector.register(sock, selectors.EVENT_READ, n)
        deadline = time.monotonic() + timeout_s + 10
        while len(closed_after) < len(opened) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                sock, at = opened[key.data]
                try:
                    if sock.recv(4096):
                        continue  # an answer (none is sent to a timed-out request line): wait for the close
                except (ssl.SSLWantReadError, BlockingIOError):
                    continue  # TLS records that carry no data (session tickets)
                except OSError:  # reset (reset_timedout_connection) or a TLS error: closed
                    pass
                closed_after[key.data] = time.monotonic() - at
                selector.unregister(sock)
    for sock, _ in opened:
        sock.close()
    times = sorted(closed_after.values())
    print(f"\nhalf-open: {len(times)} of 200 closed, after {times[0]:.2f}-{times[-1]:.2f} s "
          f"(client_header_timeout {timeout_s:g} s); a normal request meanwhile: {seconds * 1000:.0f} ms")
    assert len(times) == 200, f"{200 - len(times)} connections still open after {timeout_s + 10:g} s"
    assert timeout_s - 0.5 <= times[0] and times[-1] <= timeout_s + 5


class _Recorder(http.server.BaseHTTPRequestHandler):
    """An upstream that records each request's TCP peer and headers (in ``server.seen``) and answers 200."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.server.seen.append((self.client_address[0], dict(self.headers.items())))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def test_the_proxy_sends_the_app_the_client_it_saw_not_the_one_claimed(tmp_path):
    """What nginx sends upstream (a recording server in the app's place): it connects from 127.0.0.2
    (proxy_bind), X-Forwarded-For is the client's TCP address (not the client's claim, nor appended to it),
    X-Forwarded-Proto is https, Host is the one the browser sent, and the client's other forwarding claims
    (Forwarded, X-Real-IP, X-Forwarded-Host) are dropped."""
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    upstream.seen = []
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        with TlsProxy(upstream.server_address[1], tmp_path / "proxy", PROXY_BIND) as proxy:
            forged = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "http",
                      "X-Real-IP": "203.0.113.9", "Forwarded": "for=203.0.113.9;proto=http",
                      "X-Forwarded-Host": "evil.example"}
            statuses, _ = gets_from(OTHER_CLIENT, proxy.url, "/p/x", headers=forged,
                                    context=proxy.tls_context())
    finally:
        upstream.shutdown()
        upstream.server_close()
    assert statuses == [200]
    (peer, headers), = upstream.seen
    headers = {k.lower(): v for k, v in headers.items()}
    assert peer == PROXY_BIND
    assert headers["x-forwarded-for"] == OTHER_CLIENT and headers["x-forwarded-proto"] == "https"
    assert headers["host"] == f"127.0.0.1:{proxy.port}"
    assert not {"forwarded", "x-real-ip", "x-forwarded-host"} & set(headers), headers
    assert "203.0.113.9" not in str(headers) and "evil.example" not in str(headers)


def test_the_app_believes_forwarded_addresses_from_the_proxy_only(app, proxy):
    """The app limits requests per client address (guard.LIMITS["address"]). Through the proxy, three clients
    (127.0.0.1, .3, .4; each forging X-Forwarded-For, each within nginx's burst) together send more than the
    app lets one address send: none is refused, so the app counted them apart, by the addresses nginx set.
    A client connecting to the app directly from 127.0.0.1 and claiming a new X-Forwarded-For on every
    request is refused once over the limit: the app counts it as 127.0.0.1, not as the addresses it claims."""
    rate, burst = guard.LIMITS["address"]
    clients, per_client = ("127.0.0.1", OTHER_CLIENT, "127.0.0.4"), 40  # 40: within nginx's burst
    assert len(clients) * per_client > burst + 2 * rate, "the test's numbers no longer outrun the app's limit"

    through = []
    for i, source in enumerate(clients):
        statuses, _ = gets_from(source, proxy.url, "/", per_client, context=proxy.tls_context(),
                                headers={"X-Forwarded-For": f"203.0.113.{i + 1}"})
        through += statuses
    assert through == [200] * len(through), f"{through.count(429)} of {len(through)} refused through nginx"

    direct = [gets_from("127.0.0.1", app["server"].url, "/", headers={"X-Forwarded-For": f"203.0.113.{i}"})
              [0][0] for i in range(1, int(burst + 2 * rate) + 20)]
    assert 429 in direct, "the app believed the addresses a direct client claimed (X-Forwarded-For)"
