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

import asyncio
import contextlib
import hashlib
import hmac
import json
import threading
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from heart import WORKFLOW_DIR
from heart.annotation import crowd, dashboard, forms, guard, store
from heart.judging.human_judgments import qc_passed
from heart.tagging.taxonomy import load_taxonomy

HERE = Path(__file__).parent
STUDY_TEXTS = WORKFLOW_DIR / "resources/annotation/study.yaml"
CHOICES = [(1, "A is significantly better"), (2, "A is slightly better"), (3, "A and B are about the same"),
           (4, "B is slightly better"), (5, "B is significantly better")]
MAX_FORM_BYTES = 32_768   # the longest real form (a reply of 800 characters, escaped) is far below this
LIMITS = forms.LIMITS
TEMPLATES = {"writing": "writing.html", "rating": "rating.html", "spot_check": "spot_check.html"}


def completion_id(key: str) -> str:
    """A short opaque id of a completion key for a form field (names no system)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def create_app(db_path, taxonomy_path, title: str = "HEART annotation", public_url: str | None = None,
               rate_limits: dict | None = None, study_texts=STUDY_TEXTS):
    """The app over one store (created by ``heart-annotate init``), wrapped in :class:`.guard.Guard`.

    ``public_url`` is the address people use (behind a reverse proxy), for the links on the coordinator page;
    ``rate_limits`` overrides :data:`.guard.LIMITS`; ``study_texts`` holds the consent and practice items."""
    db_path = Path(db_path)
    if not db_path.exists():
        raise store.StoreError(f"{db_path} does not exist; run `python -m heart.annotation init` first")
    key = store.read_key(db_path)
    strategies = load_taxonomy(taxonomy_path)["strategies"]
    strategy_keys = [s["key"] for s in strategies]
    texts = yaml.safe_load(Path(study_texts).read_text())
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(title=title, choices=CHOICES, limits=LIMITS)
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    base_url = (public_url or "").rstrip("/")

    local = threading.local()

    @contextlib.contextmanager
    def db():
        """The store's connection of this worker thread, opened once and kept (opening one, with its pragmas,
        was a tenth of a request's time under load); every write still commits before the page answers."""
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = store.connect(db_path)
        yield conn

    links = {"version": None, "tokens": {}}

    def holder(token: str, coordinator: bool) -> str | None:
        """The person_id of a token with the asked role (the coordinator's, or a worker's), else None. The
        tokens (HMACs of every person under the key) are recomputed whenever the people or their epochs
        change, so a revoked link stops at once; the lookup is a dict, never a string scan."""
        with db() as conn:
            version = store.people_version(conn)
            if version != links["version"]:
                links["tokens"], links["version"] = store.tokens(conn, key), version
            found = links["tokens"].get(token)
        return found[0] if found and (found[1] == store.COORDINATOR) == coordinator else None

    def page(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        """A template rendered (:class:`.guard.Guard` adds the security headers, to every response)."""
        return templates.TemplateResponse(request, name, context, status_code=status)

    def message(request: Request, status: int, heading: str, text: str) -> HTMLResponse:
        return page(request, "message.html", status, heading=heading, text=text)

    def not_found(request: Request) -> HTMLResponse:
        return message(request, 404, "Not found", "This link is not valid. Use the link your study coordinator sent you.")

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

    def forbidden(request: Request) -> HTMLResponse:
        return message(request, 403, "Refused",
                       "This form did not come from this site's page. Reload your link and answer again.")

    def redirect(path: str) -> RedirectResponse:
        """A 303 to one of this site's paths, relative: never built from the request's Host."""
        return RedirectResponse(path, status_code=303)

    def step_nonce(token: str, step: str) -> str:
        """The form token of a consent or practice form: an HMAC of the link and the step under the key."""
        return hmac.new(key, f"{step}\x1f{token}".encode(), "sha256").hexdigest()

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request):
        return message(request, 200, title, "Open the personal link your study coordinator sent you.")

    @app.get("/s/{token}", response_class=HTMLResponse)
    def study_entry(request: Request, token: str):
        role = crowd.role_of(key, token)
        if role is None:
            return not_found(request)
        ids, error = crowd.platform_ids(request.query_params)
        if error:
            return message(request, 400, "This link is incomplete", error)
        with db() as conn:
            person_id = crowd.provision(conn, role, ids)
            person = conn.execute("SELECT role, epoch FROM people WHERE person_id = ?", (person_id,)).fetchone()
        if person_id is None:
            return message(request, 409, "This study is full",
                           "Every place in this study is taken. Please return the study on your platform.")
        return redirect(store.link_path(key, person_id, person["role"], person["epoch"]))

    @app.get("/p/{token}", response_class=HTMLResponse)
    def person_page(request: Request, token: str):
        person_id = holder(token, coordinator=False)
        return render_person(request, token, person_id) if person_id else not_found(request)

    def render_person(request, token, person_id, **kwargs):
        """What a person sees now: stopped, consent, practice, their next task, or done."""
        with db() as conn:
            study, state, role = crowd.settings(conn), crowd.state(conn, person_id), store.role(conn, person_id)
        if state["stopped_at"] is not None:
            return page(request, "stopped.html", kwargs.get("status", 200), code=study["stopped_code"])
        if study["consent"] and state["consented_at"] is None:
            return page(request, "consent.html", token=token, nonce=step_nonce(token, "consent"),
                        consent=texts["consent"])
        items = texts["practice"].get(role, [])
        if study["practice"] and state["practice_done_at"] is None and state["practice_step"] < len(items):
            step = state["practice_step"]
            return page(request, TEMPLATES[_kind(role)], kwargs.get("status", 200), task=_practice_task(role, items[step]),
                        nonce=step_nonce(token, f"practice-{step}"), token=token, action=f"/p/{token}/practice",
                        practice=True, done=step, total=len(items), error=kwargs.get("error"),
                        form=kwargs.get("form") or {}, strategies=strategies)
        return render_next(request, token, person_id, study=study, **kwargs)

    def render_next(request, token, person_id, error=None, form=None, nonce=None, status=200, study=None):
        with db() as conn:
            done, total = store.progress(conn, person_id)
            current = (store.task(conn, store.served(conn, nonce, person_id)["task_id"]) if nonce
                       else store.next_task(conn, person_id))
            if current is None:
                study = study or crowd.settings(conn)
                code, url = study["completion_code"], study["completion_url"]
                return page(request, "done.html", status, done=done, total=total, error=error, code=code,
                            url=url.replace("{code}", code or "") if url else None)
            if nonce is None:
                nonce = store.serve(conn, person_id, current["task_id"])
        return page(request, TEMPLATES[current["kind"]], status, task=public(current), nonce=nonce,
                    token=token, action=f"/p/{token}/answer", done=done, total=total, error=error,
                    form=form or {}, strategies=strategies)

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

    def too_large(request: Request) -> HTMLResponse:
        return message(request, 413, "Not accepted", "This form is not one of this site's forms, or it is too long.")

    async def guarded_post(request: Request, token: str, coordinator: bool, handler):
        """A post's checks in order -- the token and its role, the origin, the form's type and size, then
        the handler (which checks the form's nonce) -- with the store's work (a commit that waits for the
        disk) off the event loop."""
        person_id = await run_in_threadpool(holder, token, coordinator)
        if person_id is None:
            return not_found(request)
        if cross_site(request):
            return forbidden(request)
        form = await small_form(request)
        if form is None:
            return too_large(request)
        return await run_in_threadpool(handler, request, token, person_id, form)

    @app.post("/p/{token}/answer", response_class=HTMLResponse)
    async def post_answer(request: Request, token: str):
        return await guarded_post(request, token, False, store_answer)

    def kept_form(form) -> dict:
        return {k: (form.getlist(k) if k == "strategy" else str(v)) for k, v in form.items()}

    def store_answer(request: Request, token: str, person_id: str, form):
        nonce = str(form.get("nonce", ""))
        with db() as conn:
            serve_row = store.served(conn, nonce, person_id)
            if serve_row is None:
                return forbidden(request)
            study = crowd.settings(conn)
            if crowd.state(conn, person_id)["stopped_at"] is not None:
                return render_person(request, token, person_id, status=409)
            if not store.is_active(conn, serve_row["task_id"]):
                return render_next(request, token, person_id, status=409,
                                   error="The coordinator withdrew that task; here is your next one.")
            if store.now() - serve_row["served_at"] > store.PAGE_MAX_AGE_S:
                return render_next(request, token, person_id, status=409,
                                   error="That page was open for more than 12 hours, so its time on task "
                                         "would not mean much: please answer it again.")
            task = store.task(conn, serve_row["task_id"])
            kind, axes = task["kind"], [a["key"] for a in task_axes(task)]
            value, error = forms.validate(kind, form, strategy_keys, axes)
            if error:
                return render_next(request, token, person_id, error=error, form=kept_form(form), nonce=nonce,
                                   status=422)
            value["server"] = crowd.flags(kind, value, store.now() - serve_row["served_at"], study)
            if not store.answer(conn, serve_row, kind, value):
                return render_next(request, token, person_id, status=409,
                                   error="That task was already answered (in another tab?); your first answer "
                                         "is kept. Here is your next task.")
            if kind == "rating" and task.get("qc_expected"):
                crowd.attention(conn, person_id, study)
        return redirect(f"/p/{token}")

    @app.post("/p/{token}/consent", response_class=HTMLResponse)
    async def post_consent(request: Request, token: str):
        return await guarded_post(request, token, False, store_consent)

    def store_consent(request: Request, token: str, person_id: str, form):
        if not hmac.compare_digest(str(form.get("nonce", "")), step_nonce(token, "consent")):
            return forbidden(request)
        if form.get("agree") != "1":
            return message(request, 200, "You have not agreed",
                           "Nothing was recorded. You can close this page and return the study on your platform; "
                           "if you change your mind, open your link again.")
        with db() as conn:
            crowd.consent(conn, person_id)
        return redirect(f"/p/{token}")

    @app.post("/p/{token}/practice", response_class=HTMLResponse)
    async def post_practice(request: Request, token: str):
        return await guarded_post(request, token, False, store_practice)

    def store_practice(request: Request, token: str, person_id: str, form):
        with db() as conn:
            state, role = crowd.state(conn, person_id), store.role(conn, person_id)
        items, step = texts["practice"].get(role, []), state["practice_step"]
        if step >= len(items) or not hmac.compare_digest(str(form.get("nonce", "")), step_nonce(token, f"practice-{step}")):
            return redirect(f"/p/{token}")  # an old practice form (reloaded, resubmitted): carry on where they are
        item, kind = items[step], _kind(role)
        value, error = forms.validate(kind, form, strategy_keys)
        if error:
            return render_person(request, token, person_id, error=error, form=kept_form(form), status=422)
        correct, yours, expected = _practice_check(kind, item, value)
        with db() as conn:
            crowd.practice_answered(conn, person_id, step, correct, len(items))
        return page(request, "feedback.html", token=token, step=step + 1, total=len(items), correct=correct,
                    yours=yours, expected=expected, feedback=item["feedback"], example=item.get("example"))

    @app.get("/c/{token}", response_class=HTMLResponse)
    def coordinator(request: Request, token: str):
        if holder(token, coordinator=True) is None:
            return not_found(request)
        with db() as conn:
            report = dashboard.report(conn, key)
        return page(request, "coordinator.html", token=token, base=base_url, **report)

    @app.get("/c/{token}/adjudicate", response_class=HTMLResponse)
    def adjudicate_page(request: Request, token: str):
        if holder(token, coordinator=True) is None:
            return not_found(request)
        with db() as conn:
            queue = dashboard.disagreements(conn, strategy_keys, completion_id)
        return page(request, "adjudicate.html", token=token, case=queue[0] if queue else None,
                    remaining=len(queue), nonce=coordinator_csrf(key, token), strategies=strategies)

    @app.post("/c/{token}/adjudicate", response_class=HTMLResponse)
    async def adjudicate_post(request: Request, token: str):
        return await guarded_post(request, token, True, store_adjudication)

    def store_adjudication(request: Request, token: str, person_id: str, form):
        with db() as conn:
            if not hmac.compare_digest(str(form.get("nonce", "")).encode(), coordinator_csrf(key, token).encode()):
                return forbidden(request)
            open_cases = {c["cid"]: c["completion"] for c in dashboard.disagreements(conn, strategy_keys, completion_id)}
            completion = open_cases.get(str(form.get("completion", "")))
            if completion is None:
                return message(request, 422, "Not a pending disagreement",
                               "That completion has no open disagreement. Go back to the coordinator page.")
            present = [k for k in form.getlist("strategy") if k in strategy_keys]
            store.adjudicate(conn, completion, present)
        return redirect(f"/c/{token}/adjudicate")

    @app.exception_handler(404)
    async def missing(request: Request, exc):
        return not_found(request)

    @app.exception_handler(405)
    async def wrong_method(request: Request, exc):
        return message(request, 405, "Not allowed", "Open the link your study coordinator sent you.")

    return guard.Guard(app, rate_limits)


def _kind(role: str) -> str:
    """The task kind of a role (writer -> writing, ...)."""
    return {r: k for k, r in store.ROLES.items()}[role]


def _practice_task(role: str, item: dict) -> dict:
    """A practice item as a task page shows it (rater: context and A/B; writer: context; labeller: a reply)."""
    return {"kind": _kind(role), "context": item.get("context", []), "text_a": item.get("text_a"),
            "text_b": item.get("text_b"), "text": item.get("text"), "axes": []}


def _practice_check(kind: str, item: dict, value: dict) -> tuple[bool, str, str]:
    """(right?, the person's answer, the expected one) of a practice answer, in words."""
    if kind == "rating":
        right = bool(qc_passed(item["expected"], value["choice"]))
        return right, dict(CHOICES)[value["choice"]], f"{item['expected']} is better"
    if kind == "spot_check":
        expected = set(item["expected"])
        return set(value["present"]) == expected, ", ".join(value["present"]) or "none", ", ".join(sorted(expected))
    return True, value["text"], item.get("example", "")


def task_axes(task: dict) -> list[dict]:
    """The axes a rating task asks to mark ({key, name, question} each; none: one overall choice)."""
    return json.loads(task["axes"]) if task.get("axes") else []


def public(task: dict) -> dict:
    """What a page may show of a task: the dialogue, the texts and the axes to mark, never a system, model
    or writer."""
    keep = {"kind", "context", "text_a", "text_b", "text"}
    return {**{k: v for k, v in task.items() if k in keep}, "axes": task_axes(task)}


def coordinator_csrf(key: bytes, token: str) -> str:
    """The coordinator's form token: an HMAC of their link under the store's key (a cross-site page
    knows neither)."""
    return hmac.new(key, f"csrf\x1f{token}".encode(), "sha256").hexdigest()
