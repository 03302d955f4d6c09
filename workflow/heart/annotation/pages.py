"""What every page of the annotation app shares, held once on ``app.state.site``: the store's connection per
worker thread, who holds a link, the templates, and the checks every post goes through (the link and its
role, the origin, the form's type and size; the form's nonce is each handler's).

The routers of :mod:`heart.annotation.routes` read it as ``request.app.state.site``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from heart import WORKFLOW_DIR
from heart.annotation import db, forms, guard, links
from heart.tagging.taxonomy import load_taxonomy

HERE = Path(__file__).parent
STUDY_TEXTS = WORKFLOW_DIR / "resources/annotation/study.yaml"
CHOICES = [(1, "A is significantly better"), (2, "A is slightly better"), (3, "A and B are about the same"),
           (4, "B is slightly better"), (5, "B is significantly better")]
MAX_FORM_BYTES = 32_768   # the longest real form (a reply of 800 characters, escaped) is far below this
LIMITS = forms.LIMITS
#: how long a page that answered a post can be shown again (reload, Back) by the address it was redirected to;
#: at most this many are kept (the oldest go first): they are held in memory, never written
SHOWN_FOR_S, SHOWN_MAX = 30 * 60, 10_000


def completion_id(key: str) -> str:
    """A short opaque id of a completion key for a form field (names no system)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def coordinator_csrf(key: bytes, token: str) -> str:
    """The coordinator's form token: an HMAC of their link under the store's key (a cross-site page
    knows neither)."""
    return hmac.new(key, f"csrf\x1f{token}".encode(), "sha256").hexdigest()


def site(request: Request) -> "Site":
    """The app's :class:`Site`."""
    return request.app.state.site


def guarded_post(router, path: str, coordinator: bool):
    """Register ``handler(request, token, person_id, form)`` as the POST of ``path`` behind
    :meth:`Site.guarded_post` (a worker's link, or the coordinator's when ``coordinator``)."""
    def register(handler):
        async def endpoint(request: Request, token: str):
            return await site(request).guarded_post(request, token, coordinator, handler)
        endpoint.__name__ = f"post_{handler.__name__}"
        router.add_api_route(path, endpoint, methods=["POST"], response_class=HTMLResponse)
        return handler
    return register


def coordinator_page(request: Request, token: str, render):
    """The coordinator's page ``render(site, conn)`` draws, or Not found for any other link."""
    s = site(request)
    if s.holder(token, coordinator=True) is None:
        return s.not_found(request)
    with s.connection() as conn:
        return render(s, conn)


class Site:
    """One store (created by ``python -m heart.annotation init``) with its key, taxonomy, study texts and templates."""

    def __init__(self, db_path, taxonomy_path, title: str, public_url: str | None, study_texts=STUDY_TEXTS):
        self.db_path = Path(db_path)
        if not self.db_path.exists():
            raise db.StoreError(f"{self.db_path} does not exist; run `python -m heart.annotation init` first")
        self.key = links.read_key(self.db_path)
        self.title = title
        self.strategies = load_taxonomy(taxonomy_path)["strategies"]
        self.strategy_keys = [s["key"] for s in self.strategies]
        self.texts = yaml.safe_load(Path(study_texts).read_text())
        self.templates = Jinja2Templates(directory=str(HERE / "templates"))
        self.templates.env.globals.update(title=title, choices=CHOICES, limits=LIMITS)
        self.base_url = (public_url or "").rstrip("/")
        self._local = threading.local()
        self._links = {"version": None, "tokens": {}}
        self._shown: dict[tuple[str, str], tuple[float, int, bytes]] = {}  # (token, key) -> (until, status, body)
        self._shown_lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self):
        """The store's connection of this worker thread, opened once and kept (opening one, with its pragmas,
        was a tenth of a request's time under load); every write still commits before the page answers."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = db.connect(self.db_path)
        yield conn

    def holder(self, token: str, coordinator: bool) -> str | None:
        """The person_id of a token with the asked role (the coordinator's, or a worker's), else None. The
        tokens (HMACs of every person under the key) are recomputed whenever the people or their epochs
        change, so a revoked link stops at once; the lookup is a dict, never a string scan."""
        with self.connection() as conn:
            version = links.people_version(conn)
            if version != self._links["version"]:
                self._links["tokens"], self._links["version"] = links.tokens(conn, self.key), version
            found = self._links["tokens"].get(token)
        return found[0] if found and (found[1] == links.COORDINATOR) == coordinator else None

    def step_nonce(self, token: str, step: str) -> str:
        """The form token of a consent or practice form: an HMAC of the link and the step under the key."""
        return hmac.new(self.key, f"{step}\x1f{token}".encode(), "sha256").hexdigest()

    # --- responses ------------------------------------------------------------------------------

    def page(self, request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        """A template rendered (:class:`.guard.Guard` adds the security headers, to every response)."""
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def message(self, request: Request, status: int, heading: str, text: str) -> HTMLResponse:
        return self.page(request, "message.html", status, heading=heading, text=text)

    def not_found(self, request: Request) -> HTMLResponse:
        return self.message(request, 404, "Not found",
                            "This link is not valid. Use the link your study coordinator sent you.")

    def forbidden(self, request: Request) -> HTMLResponse:
        return self.message(request, 403, "Refused",
                            "This form did not come from this site's page. Reload your link and answer again.")

    def too_large(self, request: Request) -> HTMLResponse:
        return self.message(request, 413, "Not accepted",
                            "This form is not one of this site's forms, or it is too long.")

    @staticmethod
    def redirect(path: str) -> RedirectResponse:
        """A 303 to one of this site's paths, relative: never built from the request's Host."""
        return RedirectResponse(path, status_code=303)

    # --- posts ----------------------------------------------------------------------------------

    @staticmethod
    def cross_site(request: Request) -> bool:
        """True if the browser says the post comes from another origin. Sec-Fetch-Site decides where the
        browser sends it; else a real Origin must name this host. (Under ``Referrer-Policy: no-referrer`` a
        browser sends ``Origin: null`` even for this site's own forms; the page's nonce still guards.) An
        Origin that is not a URL at all is another site's."""
        fetch_site = request.headers.get("sec-fetch-site")
        if fetch_site is not None:
            return fetch_site not in ("same-origin", "none")
        origin = request.headers.get("origin")
        if not origin or origin == "null":
            return False
        try:
            return urlsplit(origin).netloc != request.headers.get("host", "")
        except ValueError:
            return True

    @staticmethod
    async def small_form(request: Request):
        """The posted form, or None when it is not a small URL-encoded form (checked before parsing) or does
        not arrive within :data:`.guard.BODY_TIMEOUT_S`."""
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        length = request.headers.get("content-length", "")
        if kind != "application/x-www-form-urlencoded" or not length.isdigit() or int(length) > MAX_FORM_BYTES:
            return None
        try:
            return await asyncio.wait_for(request.form(max_files=0, max_fields=64, max_part_size=MAX_FORM_BYTES),
                                          guard.BODY_TIMEOUT_S)
        except asyncio.TimeoutError:
            return None

    async def guarded_post(self, request: Request, token: str, coordinator: bool, handler):
        """A post's checks in order -- the token and its role, the origin, the form's type and size, then
        the handler (which checks the form's nonce) -- with the store's work (a commit that waits for the
        disk) off the event loop."""
        person_id = await run_in_threadpool(self.holder, token, coordinator)
        if person_id is None:
            return self.not_found(request)
        if self.cross_site(request):
            return self.forbidden(request)
        form = await self.small_form(request)
        if form is None:
            return self.too_large(request)
        answer = await run_in_threadpool(handler, request, token, person_id, form)
        if isinstance(answer, RedirectResponse):
            return answer
        # post/redirect/get: a page answering a post (a refused reason, "already answered", practice feedback)
        # is shown by the address it redirects to, so Back and reload never ask to send the form again
        where = f"/c/{token}/adjudicate" if coordinator else f"/p/{token}"
        return self.redirect(f"{where}?shown={self._keep_shown(token, answer)}")

    def _keep_shown(self, token: str, answer: HTMLResponse) -> str:
        key, now = secrets.token_urlsafe(12), time.monotonic()
        with self._shown_lock:  # all kept alike long, so the oldest (first inserted) expire first
            while self._shown and (len(self._shown) >= SHOWN_MAX or next(iter(self._shown.values()))[0] < now):
                del self._shown[next(iter(self._shown))]
            self._shown[(token, key)] = (now + SHOWN_FOR_S, answer.status_code, bytes(answer.body))
        return key

    def shown(self, request: Request, token: str) -> HTMLResponse | None:
        """The page a post answered, by the address it redirected to (``?shown=<key>``, bound to the link), or
        None (no key, another link's, or older than :data:`SHOWN_FOR_S`: the link's current page instead)."""
        key = request.query_params.get("shown")
        if not key:
            return None
        with self._shown_lock:
            kept = self._shown.get((token, key))
        if kept is None or kept[0] < time.monotonic():
            return None
        return HTMLResponse(kept[2], status_code=kept[1])
