"""The coordinator's pages (``/c/<token>``): the study's progress and every link, and the adjudication of
spot-check labels that disagree."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from heart.annotation import dashboard, store
from heart.annotation.pages import completion_id, coordinator_csrf, coordinator_page, guarded_post, site

router = APIRouter()


@router.get("/c/{token}", response_class=HTMLResponse)
def coordinator(request: Request, token: str):
    def render(s, conn):
        return s.page(request, "coordinator.html", token=token, base=s.base_url, **dashboard.report(conn, s.key))
    return coordinator_page(request, token, render)


@router.get("/c/{token}/adjudicate", response_class=HTMLResponse)
def adjudicate_page(request: Request, token: str):
    def render(s, conn):
        shown = s.shown(request, token)  # the page that answered a post, by the address it redirected to
        if shown is not None:
            return shown
        queue = dashboard.disagreements(conn, s.strategy_keys, completion_id)
        return s.page(request, "adjudicate.html", token=token, case=queue[0] if queue else None,
                      remaining=len(queue), nonce=coordinator_csrf(s.key, token), strategies=s.strategies)
    return coordinator_page(request, token, render)


@guarded_post(router, "/c/{token}/adjudicate", coordinator=True)
def store_adjudication(request: Request, token: str, person_id: str, form):
    s = site(request)
    with s.connection() as conn:
        if not hmac.compare_digest(str(form.get("nonce", "")).encode(), coordinator_csrf(s.key, token).encode()):
            return s.forbidden(request)
        open_cases = {c["cid"]: c["completion"] for c in dashboard.disagreements(conn, s.strategy_keys, completion_id)}
        completion = open_cases.get(str(form.get("completion", "")))
        if completion is None:
            return s.message(request, 422, "Not a pending disagreement",
                             "That completion has no open disagreement. Go back to the coordinator page.")
        present = [k for k in form.getlist("strategy") if k in s.strategy_keys]
        store.adjudicate(conn, completion, present)
    return s.redirect(f"/c/{token}/adjudicate")
