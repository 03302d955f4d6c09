"""The annotation web app: writing, rating and strategy spot-check pages, and the coordinator's page.

FastAPI (with uvicorn, both already installed through ``llama-cpp-python[server]``) serves plain HTML
forms rendered by Jinja2 with autoescaping: a page works without JavaScript, and the little script
there is (keyboard shortcuts, a word counter) only helps. Every answer goes through :mod:`.store`.

Security:

- a person reaches only their own tasks, through their secret link ``/p/<token>``; the coordinator's
  page is ``/c/<token>``; an unknown token gets the same 404 as any unknown page;
- every form carries the nonce of the page it came from (stored server-side with the task and
  the person: the synchronizer-token defence against cross-site requests), and a post whose ``Origin``
  or ``Sec-Fetch-Site`` says another site is refused;
- pages name no system, model or writer: a rating page shows "Response A" and "Response B" and its
  form carries only the nonce;
- every field is validated on the server (:mod:`.forms`); text is escaped on output; every response -- an
  error too -- carries a strict Content-Security-Policy, ``Referrer-Policy: no-referrer`` (links hold secrets)
  and ``no-store``, and requests over their rate limits are refused before any work (:mod:`.guard`);
- the app never builds a URL from the request's ``Host`` (redirects are relative, the coordinator's links
  use ``public_url``), so a spoofed ``Host`` is echoed nowhere.

People recruited on a crowd platform enter through a study link and meet consent, practice, their tasks and
a completion code (:mod:`.crowd`).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.staticfiles import StaticFiles

from heart.annotation import guard
from heart.annotation.routes import coordinator, entry, worker
from heart.annotation.pages import HERE, STUDY_TEXTS, Site, site

__all__ = ["STUDY_TEXTS", "create_app"]


def create_app(db_path, taxonomy_path, title: str = "HEART annotation", public_url: str | None = None,
               rate_limits: dict | None = None, study_texts=STUDY_TEXTS):
    """The app over one store (created by ``python -m heart.annotation init``), wrapped in :class:`.guard.Guard`.

    ``public_url`` is the address people use (behind a reverse proxy), for the links on the coordinator page;
    ``rate_limits`` overrides :data:`.guard.LIMITS`; ``study_texts`` holds the consent and practice items."""
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)
    app.state.site = Site(db_path, taxonomy_path, title, public_url, study_texts)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    for router in (entry.router, worker.router, coordinator.router):
        app.include_router(router)

    @app.exception_handler(404)
    async def missing(request: Request, exc):
        return site(request).not_found(request)

    @app.exception_handler(405)
    async def wrong_method(request: Request, exc):
        return site(request).message(request, 405, "Not allowed", "Open the link your study coordinator sent you.")

    return guard.Guard(app, rate_limits)
