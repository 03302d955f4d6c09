"""A person's own pages (``/p/<token>``): what they see now -- stopped, consent, practice, their next task or
done -- and the posts of an answer, a consent and a practice answer. Pages name no system, model or writer."""

from __future__ import annotations

import hmac
import json

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from heart.annotation import crowd, db, forms, links, store
from heart.annotation.pages import CHOICES, guarded_post, site
from heart.judging.human_judgments import qc_passed

router = APIRouter()
TEMPLATES = {"writing": "writing.html", "rating": "rating.html", "spot_check": "spot_check.html",
             "safety_review": "safety_review.html"}


@router.get("/p/{token}", response_class=HTMLResponse)
def person_page(request: Request, token: str):
    s = site(request)
    shown = s.shown(request, token)  # the page a post of this link answered (a declined place's link is dead now)
    if shown is not None:
        return shown
    person_id = s.holder(token, coordinator=False)
    return render_person(request, token, person_id) if person_id else s.not_found(request)


def render_person(request, token, person_id, **kwargs):
    """What a person sees now: stopped, consent, practice, their next task, or done."""
    s = site(request)
    with s.connection() as conn:
        study, state, role = crowd.settings(conn), crowd.state(conn, person_id), links.role(conn, person_id)
    if state["stopped_at"] is not None:
        return s.page(request, "stopped.html", kwargs.get("status", 200), code=study["stopped_code"])
    if study["consent"] and state["consented_at"] is None:
        return s.page(request, "consent.html", token=token, nonce=s.step_nonce(token, "consent"),
                      consent=s.texts["consent"])
    items = s.texts["practice"].get(role, [])
    if study["practice"] and state["practice_done_at"] is None and state["practice_step"] < len(items):
        step = state["practice_step"]
        return s.page(request, TEMPLATES[kind_of(role)], kwargs.get("status", 200),
                      task=practice_task(role, items[step]), nonce=s.step_nonce(token, f"practice-{step}"),
                      token=token, action=f"/p/{token}/practice", practice=True, done=step, total=len(items),
                      error=kwargs.get("error"), form=kwargs.get("form") or {}, strategies=s.strategies)
    return render_next(request, token, person_id, study=study, **kwargs)


def render_next(request, token, person_id, error=None, form=None, nonce=None, status=200, study=None):
    """The person's next task (or the one of ``nonce``, shown again with ``error``), or the done page."""
    s = site(request)
    with s.connection() as conn:
        done, total = store.progress(conn, person_id)
        current = (store.task(conn, store.served(conn, nonce, person_id)["task_id"]) if nonce
                   else store.next_task(conn, person_id))
        if current is None:
            study = study or crowd.settings(conn)
            code, url = study["completion_code"], study["completion_url"]
            return s.page(request, "done.html", status, done=done, total=total, error=error, code=code,
                          url=url.replace("{code}", code or "") if url else None)
        if nonce is None:
            nonce = store.serve(conn, person_id, current["task_id"])
    return s.page(request, TEMPLATES[current["kind"]], status, task=public(current), nonce=nonce,
                  token=token, action=f"/p/{token}/answer", done=done, total=total, error=error,
                  form=form or {}, strategies=s.strategies)


def kept_form(form) -> dict:
    return {k: (form.getlist(k) if k == "strategy" else str(v)) for k, v in form.items()}


def _refused_serve(request, token, person_id, conn, serve_row):
    """Why a served page cannot take its answer now (the study stopped, the task withdrawn, the page too
    old), as the response to give; None when it can."""
    if crowd.state(conn, person_id)["stopped_at"] is not None:
        return render_person(request, token, person_id, status=409)
    if not store.is_active(conn, serve_row["task_id"]):
        return render_next(request, token, person_id, status=409,
                           error="The coordinator withdrew that task; here is your next one.")
    if db.now() - serve_row["served_at"] > store.PAGE_MAX_AGE_S:
        return render_next(request, token, person_id, status=409,
                           error="That page was open for more than 12 hours, so its time on task "
                                 "would not mean much: please answer it again.")
    return None


@guarded_post(router, "/p/{token}/answer", coordinator=False)
def store_answer(request: Request, token: str, person_id: str, form):
    s = site(request)
    nonce = str(form.get("nonce", ""))
    with s.connection() as conn:
        serve_row = store.served(conn, nonce, person_id)
        if serve_row is None:
            return s.forbidden(request)
        refused = _refused_serve(request, token, person_id, conn, serve_row)
        if refused is not None:
            return refused
        study = crowd.settings(conn)
        task = store.task(conn, serve_row["task_id"])
        kind, axes = task["kind"], [a["key"] for a in task_axes(task)]
        value, error = forms.validate(kind, form, s.strategy_keys, axes)
        if error:
            return render_next(request, token, person_id, error=error, form=kept_form(form), nonce=nonce,
                               status=422)
        value["server"] = crowd.flags(kind, value, db.now() - serve_row["served_at"], study)
        if not store.answer(conn, serve_row, kind, value):
            return render_next(request, token, person_id, status=409,
                               error="That task was already answered (in another tab?); your first answer "
                                     "is kept. Here is your next task.")
        if kind == "rating" and task.get("qc_expected"):
            crowd.attention(conn, person_id, study)
    return s.redirect(f"/p/{token}")


@guarded_post(router, "/p/{token}/consent", coordinator=False)
def store_consent(request: Request, token: str, person_id: str, form):
    s = site(request)
    if not hmac.compare_digest(str(form.get("nonce", "")), s.step_nonce(token, "consent")):
        return s.forbidden(request)
    if form.get("agree") != "1":
        with s.connection() as conn:  # the place goes to the next participant at once
            held = crowd.holds_place(conn, person_id)
            if held:
                crowd.release(conn, person_id, "declined the consent")
        kept = ("Your place has been given to someone else. Kept for the study's records: your platform id, and "
                "that you declined and when; no answer was recorded. " if held else
                "No answer was recorded; the study's log keeps that you declined and when. ")
        return s.message(request, 200, "You have not agreed",
                         kept + "You can close this page and return the study on your platform"
                         + (" (to take part after all, open the study link again)." if held else
                            "; if you change your mind, open your link again."))
    with s.connection() as conn:
        crowd.consent(conn, person_id)
    return s.redirect(f"/p/{token}")


@guarded_post(router, "/p/{token}/practice", coordinator=False)
def store_practice(request: Request, token: str, person_id: str, form):
    s = site(request)
    with s.connection() as conn:
        state, role = crowd.state(conn, person_id), links.role(conn, person_id)
    items, step = s.texts["practice"].get(role, []), state["practice_step"]
    if step >= len(items) or not hmac.compare_digest(str(form.get("nonce", "")),
                                                     s.step_nonce(token, f"practice-{step}")):
        return s.redirect(f"/p/{token}")  # an old practice form (reloaded, resubmitted): carry on where they are
    item, kind = items[step], kind_of(role)
    value, error = forms.validate(kind, form, s.strategy_keys)
    if error:
        return render_person(request, token, person_id, error=error, form=kept_form(form), status=422)
    correct, yours, expected = practice_check(kind, item, value)
    with s.connection() as conn:
        crowd.practice_answered(conn, person_id, step, correct, len(items))
    return s.page(request, "feedback.html", token=token, step=step + 1, total=len(items), correct=correct,
                  yours=yours, expected=expected, feedback=item["feedback"], example=item.get("example"))


# --- what a page shows ---------------------------------------------------------------------------

def kind_of(role: str) -> str:
    """The task kind of a role (writer -> writing, ...)."""
    return {r: k for k, r in store.ROLES.items()}[role]


def practice_task(role: str, item: dict) -> dict:
    """A practice item as a task page shows it (rater: context and A/B; writer: context; labeller: a reply)."""
    return {"kind": kind_of(role), "context": item.get("context", []), "text_a": item.get("text_a"),
            "text_b": item.get("text_b"), "text": item.get("text"), "categories": item.get("categories"), "axes": []}


def practice_check(kind: str, item: dict, value: dict) -> tuple[bool, str, str]:
    """(right?, the person's answer, the expected one) of a practice answer, in words."""
    if kind == "rating":
        right = bool(qc_passed(item["expected"], value["choice"]))
        return right, dict(CHOICES)[value["choice"]], f"{item['expected']} is better"
    if kind == "safety_review":
        return value["decision"] == item["expected"], value["decision"], item["expected"]
    if kind == "spot_check":
        expected = set(item["expected"])
        return set(value["present"]) == expected, ", ".join(value["present"]) or "none", ", ".join(sorted(expected))
    return True, value["text"], item.get("example", "")


def task_axes(task: dict) -> list[dict]:
    """The axes a rating task asks to mark ({key, name, question} each; none: one overall choice)."""
    return json.loads(task["axes"]) if task.get("axes") else []


def public(task: dict) -> dict:
    """What a page may show of a task: the dialogue, the texts, the axes to mark and the safety categories
    flagged, never a system, model or writer."""
    keep = {"kind", "context", "text_a", "text_b", "text", "categories"}
    return {**{k: v for k, v in task.items() if k in keep}, "axes": task_axes(task)}
