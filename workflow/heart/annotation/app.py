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
- every field is validated on the server; text is escaped on output; responses carry a strict
  Content-Security-Policy, ``Referrer-Policy: no-referrer`` (links hold secrets) and ``no-store``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import hmac
import statistics
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from heart.annotation import store
from heart.judging import human_judgments
from heart.judging.human_judgments import qc_passed
from heart.tagging.taxonomy import load_taxonomy

HERE = Path(__file__).parent
CHOICES = [(1, "A is significantly better"), (2, "A is slightly better"), (3, "A and B are about the same"),
           (4, "B is slightly better"), (5, "B is significantly better")]
MAX_FORM_BYTES = 32_768   # the longest real form (a reply of 800 characters, escaped) is far below this
MAX_PAGE_AGE_S = 12 * 3600  # a page open longer is served again: time on task must stay meaningful
LIMITS = {"reply_words": 100, "reply_chars": 800, "rationale_min_chars": 5, "rationale_chars": 1000}
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def completion_id(key: str) -> str:
    """A short opaque id of a completion key for a form field (names no system)."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def create_app(db_path, taxonomy_path, title: str = "HEART annotation", public_url: str | None = None) -> FastAPI:
    """The app over one store (created by ``heart-annotate init``); ``public_url`` is the address people
    use (behind a reverse proxy), for the links on the coordinator page."""
    db_path = Path(db_path)
    if not db_path.exists():
        raise store.StoreError(f"{db_path} does not exist; run `python -m heart.annotation init` first")
    key = store.read_key(db_path)
    strategies = load_taxonomy(taxonomy_path)["strategies"]
    strategy_keys = [s["key"] for s in strategies]
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(title=title, choices=CHOICES, limits=LIMITS)
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")

    def db():
        """A connection to the store for one request, closed when its ``with`` block ends."""
        return contextlib.closing(store.connect(db_path))

    def holder(token: str, coordinator: bool) -> str | None:
        """The person_id of a token with the asked role (the coordinator's, or a worker's), else None. Tokens
        are recomputed from the key on each call, so a revoked link stops at once; the lookup is a dict of
        HMACs, never a string scan."""
        with db() as conn:
            found = store.tokens(conn, key).get(token)
        return found[0] if found and (found[1] == store.COORDINATOR) == coordinator else None

    def page(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
        response = templates.TemplateResponse(request, name, context, status_code=status)
        response.headers.update(_HEADERS)
        return response

    def not_found(request: Request) -> HTMLResponse:
        return page(request, "message.html", 404, heading="Not found",
                    text="This link is not valid. Use the link your study coordinator sent you.")

    def cross_site(request: Request) -> bool:
        """True if the browser says the post comes from another origin. Sec-Fetch-Site decides where the
        browser sends it; else a real Origin must name this host. (Under ``Referrer-Policy: no-referrer`` a
        browser sends ``Origin: null`` even for this site's own forms; the page's nonce still guards.)"""
        fetch_site = request.headers.get("sec-fetch-site")
        if fetch_site is not None:
            return fetch_site not in ("same-origin", "none")
        origin = request.headers.get("origin")
        return bool(origin) and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", "")

    def forbidden(request: Request) -> HTMLResponse:
        return page(request, "message.html", 403, heading="Refused",
                    text="This form did not come from this site's page. Reload your link and answer again.")

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request):
        return page(request, "message.html", heading=title,
                    text="Open the personal link your study coordinator sent you.")

    @app.get("/p/{token}", response_class=HTMLResponse)
    def person_page(request: Request, token: str):
        person_id = holder(token, coordinator=False)
        return render_next(request, token, person_id) if person_id else not_found(request)

    def render_next(request, token, person_id, error=None, form=None, nonce=None, status=200):
        with db() as conn:
            done, total = store.progress(conn, person_id)
            current = (store.task(conn, store.served(conn, nonce, person_id)["task_id"]) if nonce
                       else store.next_task(conn, person_id))
            if current is None:
                return page(request, "done.html", status, done=done, total=total, error=error)
            if nonce is None:
                nonce = store.serve(conn, person_id, current["task_id"])
        template = {"writing": "writing.html", "rating": "rating.html", "spot_check": "spot_check.html"}
        return page(request, template[current["kind"]], status, task=public(current), nonce=nonce,
                    token=token, done=done, total=total, error=error, form=form or {},
                    strategies=strategies)

    async def small_form(request: Request):
        """The posted form, or None when it is not a small URL-encoded form (checked before parsing)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        length = request.headers.get("content-length", "")
        if kind != "application/x-www-form-urlencoded" or not length.isdigit() or int(length) > MAX_FORM_BYTES:
            return None
        return await request.form(max_files=0, max_fields=64, max_part_size=MAX_FORM_BYTES)

    def too_large(request: Request) -> HTMLResponse:
        return page(request, "message.html", 413, heading="Not accepted",
                    text="This form is not one of this site's forms, or it is too long.")

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

    def store_answer(request: Request, token: str, person_id: str, form):
        nonce = str(form.get("nonce", ""))
        with db() as conn:
            serve_row = store.served(conn, nonce, person_id)
            if serve_row is None:
                return forbidden(request)
            if not store.is_active(conn, serve_row["task_id"]):
                return render_next(request, token, person_id, status=409,
                                   error="The coordinator withdrew that task; here is your next one.")
            if store.now() - serve_row["served_at"] > MAX_PAGE_AGE_S:
                return render_next(request, token, person_id, status=409,
                                   error="That page was open for more than 12 hours, so its time on task "
                                         "would not mean much: please answer it again.")
            task = store.task(conn, serve_row["task_id"])
            kind, axes = task["kind"], [a["key"] for a in task_axes(task)]
            value, error = validate(kind, form, strategy_keys, axes)
            if error:
                kept = {k: (form.getlist(k) if k == "strategy" else str(v)) for k, v in form.items()}
                return render_next(request, token, person_id, error=error, form=kept, nonce=nonce, status=422)
            if not store.answer(conn, serve_row, kind, value):
                return render_next(request, token, person_id, status=409,
                                   error="That task was already answered (in another tab?); your first answer "
                                         "is kept. Here is your next task.")
        return RedirectResponse(f"/p/{token}", status_code=303, headers=_HEADERS)

    @app.get("/c/{token}", response_class=HTMLResponse)
    def coordinator(request: Request, token: str):
        if holder(token, coordinator=True) is None:
            return not_found(request)
        with db() as conn:
            report = dashboard(conn, key)
        base = (public_url or str(request.base_url)).rstrip("/")
        return page(request, "coordinator.html", token=token, base=base, **report)

    @app.get("/c/{token}/adjudicate", response_class=HTMLResponse)
    def adjudicate_page(request: Request, token: str):
        if holder(token, coordinator=True) is None:
            return not_found(request)
        with db() as conn:
            queue = disagreements(conn, strategy_keys)
        return page(request, "adjudicate.html", token=token, case=queue[0] if queue else None,
                    remaining=len(queue), nonce=coordinator_csrf(key, token), strategies=strategies)

    @app.post("/c/{token}/adjudicate", response_class=HTMLResponse)
    async def adjudicate_post(request: Request, token: str):
        return await guarded_post(request, token, True, store_adjudication)

    def store_adjudication(request: Request, token: str, person_id: str, form):
        with db() as conn:
            if not hmac.compare_digest(str(form.get("nonce", "")).encode(), coordinator_csrf(key, token).encode()):
                return forbidden(request)
            open_cases = {c["cid"]: c["completion"] for c in disagreements(conn, strategy_keys)}
            completion = open_cases.get(str(form.get("completion", "")))
            if completion is None:
                return page(request, "message.html", 422, heading="Not a pending disagreement",
                            text="That completion has no open disagreement. Go back to the coordinator page.")
            present = [k for k in form.getlist("strategy") if k in strategy_keys]
            store.adjudicate(conn, completion, present)
        return RedirectResponse(f"/c/{token}/adjudicate", status_code=303, headers=_HEADERS)

    @app.exception_handler(404)
    async def missing(request: Request, exc):
        return not_found(request)

    return app


def task_axes(task: dict) -> list[dict]:
    """The axes a rating task asks to mark ({key, name, question} each; none: one overall choice)."""
    return json.loads(task["axes"]) if task.get("axes") else []


def public(task: dict) -> dict:
    """What a page may show of a task: the dialogue, the texts and the axes to mark, never a system, model
    or writer."""
    keep = {"kind", "context", "text_a", "text_b", "text"}
    return {**{k: v for k, v in task.items() if k in keep}, "axes": task_axes(task)}


#: a per-axis mark as posted (the shown sides) and as stored: what the human judgments reader accepts
AXIS_MARKS = tuple(human_judgments.AXIS_MARKS)


def validate(kind: str, form, strategy_keys: list[str], axes: list[str] = ()) -> tuple[dict, str | None]:
    """(answer, None) or ({}, what is wrong) for a posted form of a task of ``kind``; a rating task with
    ``axes`` needs a mark per axis (field ``axis_<key>``: A, B or same)."""
    if kind == "writing":
        text = " ".join(str(form.get("reply", "")).split())
        words = len(text.split())
        if not words:
            return {}, "Write your reply before submitting."
        if words > LIMITS["reply_words"] or len(text) > LIMITS["reply_chars"]:
            return {}, (f"Your reply has {words} words; keep it to 1-3 sentences "
                        f"(about 40 words, at most {LIMITS['reply_words']}).")
        return {"text": text, "pasted": form.get("pasted") == "1"}, None
    if kind == "rating":
        choice = str(form.get("choice", ""))
        if choice not in {"1", "2", "3", "4", "5"}:
            return {}, "Choose one of the five options."
        rationale = " ".join(str(form.get("rationale", "")).split())
        if len(rationale) < LIMITS["rationale_min_chars"]:
            return {}, "Say in a few words why you chose it."
        if len(rationale) > LIMITS["rationale_chars"]:
            return {}, f"Keep the reason under {LIMITS['rationale_chars']} characters."
        marks = {k: str(form.get(f"axis_{k}", "")) for k in axes}
        unmarked = [k for k, v in marks.items() if v not in AXIS_MARKS]
        if unmarked:
            return {}, f"Mark every aspect (A, B or no clear difference): {', '.join(unmarked)} is not marked."
        return {"choice": int(choice), "rationale": rationale, **({"axes": marks} if axes else {})}, None
    if kind == "spot_check":
        chosen = form.getlist("strategy")
        unknown = [k for k in chosen if k not in strategy_keys]
        if unknown:
            return {}, "An unknown strategy was submitted; reload the page."
        if not chosen and form.get("none") != "1":
            return {}, 'Tick every strategy the reply uses, or tick "None of these".'
        if chosen and form.get("none") == "1":
            return {}, 'You ticked strategies and "None of these"; untick one.'
        return {"present": sorted(set(chosen))}, None
    raise ValueError(f"unknown task kind {kind!r}")


def disagreements(conn, strategy_keys: list[str]) -> list[dict]:
    """Spot-checked completions whose labellers differ and that are not yet adjudicated, with the votes
    per strategy."""
    checks = store.spot_checks(store.answers_frame(conn), store.adjudications(conn))
    return [{"completion": key, "cid": completion_id(key), "text": c["task"]["text"],
             "context": store.context(conn, c["task"]["item_id"]), "n": len(c["labels"]),
             "votes": {k: sum(k in s for _, s in c["labels"]) for k in strategy_keys}}
            for key, c in checks.items() if c["status"] == "open"]


def dashboard(conn, key: bytes) -> dict:
    """Progress per person and per item, quality-check failures and the adjudication queue."""
    answers = store.answers_frame(conn)
    checks = [a for a in answers.itertuples() if a.kind == "rating" and a.task.get("qc_expected")]
    failures = [a for a in checks if not qc_passed(a.task["qc_expected"], a.answer["choice"])]
    n_checks, n_failed = Counter(a.person_id for a in checks), Counter(a.person_id for a in failures)
    people = []
    for r in conn.execute("SELECT person_id, role, epoch FROM people ORDER BY role, person_id"):
        if r["role"] == store.COORDINATOR:
            continue
        done, total = store.progress(conn, r["person_id"])
        mine = answers[answers["person_id"] == r["person_id"]]
        people.append({
            "person_id": r["person_id"], "role": r["role"], "done": done, "total": total,
            "link": store.link_path(key, r["person_id"], r["role"], r["epoch"]),
            "median_seconds": statistics.median(mine["seconds"]) if len(mine) else None,
            "last": mine["answered_at"].max() if len(mine) else None,
            "qc": n_checks[r["person_id"]], "qc_failed": n_failed[r["person_id"]],
            "pasted": int(sum(bool(a.answer.get("pasted")) for a in mine.itertuples())),
        })
    qc_failures = [{"person_id": a.person_id, "item_id": a.item_id, "expected": a.task["qc_expected"],
                    "choice": a.answer["choice"], "rationale": a.answer["rationale"]} for a in failures]
    items = [dict(r) for r in conn.execute(
        "SELECT t.kind, t.item_id, COUNT(*) AS total, COUNT(a.task_id) AS done FROM tasks t "
        "LEFT JOIN answers a USING (task_id) WHERE t.active = 1 GROUP BY t.kind, t.item_id "
        "ORDER BY CAST(COUNT(a.task_id) AS REAL) / COUNT(*), t.kind, t.item_id")]
    kinds = [dict(r) for r in conn.execute(
        "SELECT t.kind, COUNT(*) AS total, COUNT(a.task_id) AS done, COUNT(DISTINCT t.item_id) AS n_items "
        "FROM tasks t LEFT JOIN answers a USING (task_id) WHERE t.active = 1 GROUP BY t.kind ORDER BY t.kind")]
    pending = sum(c["status"] == "open" for c in store.spot_checks(answers, store.adjudications(conn)).values())
    return {"people": people, "qc_failures": qc_failures, "items": items[:60], "n_items": len(items),
            "kinds": kinds, "pending": pending}


def coordinator_csrf(key: bytes, token: str) -> str:
    """The coordinator's form token: an HMAC of their link under the store's key (a cross-site page
    knows neither)."""
    return hmac.new(key, f"csrf\x1f{token}".encode(), "sha256").hexdigest()
