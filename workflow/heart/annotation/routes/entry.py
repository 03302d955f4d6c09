"""The crowd entry: a study link (``/s/<token>``) shared by every participant of a role, which provisions a
person for the platform's ids and sends them on to their own link (:mod:`heart.annotation.crowd`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from heart.annotation import crowd, links
from heart.annotation.pages import site

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def index(request: Request):
    s = site(request)
    return s.message(request, 200, s.title, "Open the personal link your study coordinator sent you.")


@router.get("/s/{token}", response_class=HTMLResponse)
def study_entry(request: Request, token: str):
    s = site(request)
    role = crowd.role_of(s.key, token)
    if role is None:
        return s.not_found(request)
    ids, error = crowd.platform_ids(request.query_params)
    if error:
        return s.message(request, 400, "This link is incomplete", error)
    with s.connection() as conn:
        person_id, refused = crowd.provision(conn, role, ids)
        person = conn.execute("SELECT role, epoch FROM people WHERE person_id = ?", (person_id,)).fetchone()
    if refused:
        return s.message(request, 403, "You cannot take part again", refused + " Please return the study on your "
                         "platform.")
    if person_id is None:
        return s.message(request, 409, "This study is full",
                         "Every place in this study is in use by someone working on it. Please return the study on "
                         "your platform.")
    return s.redirect(links.link_path(s.key, person_id, person["role"], person["epoch"]))
