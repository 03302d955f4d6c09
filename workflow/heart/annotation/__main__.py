"""Collect human data for HEART: ``PYTHONPATH=workflow .venv/bin/python -m heart.annotation --help`` from the
checkout (the docs call it ``heart-annotate``: ``alias heart-annotate='PYTHONPATH=workflow .venv/bin/python -m
heart.annotation'``; ``make annotate`` runs ``serve``).

    init    create the store (SQLite + link key) and load the task table
    serve   load the task table (if given) and serve the pages on 127.0.0.1
    links   print every person's secret link
    revoke  give one person a new link (the old one stops working); a crowd participant's place is given
            back instead and their platform id blocked
    free    give a crowd participant's place back (its unanswered tasks go to the next participant)
    answers list answers (task id, person, kind, time, a preview), to find one to void
    void    withdraw one answer (kept in table voided, recorded in the audit log); its task is served again
    backup  copy the store and its key into a folder while the server runs
    restore put a backup in place of the store (refused while a server holds it: stop it first)
    export  write the import files (rule export_annotations does this inside the workflow)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from heart import WORKFLOW_DIR
from heart.annotation import backup, crowd, db as store_db, links, store

DEFAULT_TAXONOMY = WORKFLOW_DIR / "resources/taxonomy/strategies.yaml"


DEFAULT_DB = Path("resources/human/annotation.sqlite")


def _defaults(args) -> None:
    """--db and --taxonomy: as given, else what rule annotation_tasks recorded beside --tasks for its config
    (results/annotation/serve.json), else the defaults."""
    recorded = {}
    tasks = getattr(args, "tasks", None)
    if tasks is not None and (tasks.parent / "serve.json").is_file():
        recorded = json.loads((tasks.parent / "serve.json").read_text())
    if args.db is None:
        args.db = Path(recorded.get("db", DEFAULT_DB))
    if hasattr(args, "taxonomy") and args.taxonomy is None:
        name = recorded.get("taxonomy")  # a config's tagging.taxonomy: workflow/resources/taxonomy/<name>.yaml
        args.taxonomy = DEFAULT_TAXONOMY.with_name(f"{name}.yaml") if name else DEFAULT_TAXONOMY


def _load(db: Path, tasks: Path | None) -> None:
    """Create the store if absent and load the task table, with the study settings (config annotation.crowd)
    rule annotation_tasks recorded beside it."""
    store.create(db)
    if tasks is None:
        return
    if not tasks.exists():
        sys.exit(f"{tasks} does not exist: make it with `make annotate` (it makes the tasks of the config, then "
                 "serves them) or `.venv/bin/snakemake --cores 2 results/annotation/tasks.parquet`")
    recorded = tasks.parent / "serve.json"
    conn = store_db.connect(db)
    try:
        counts = store.load_tasks(conn, pd.read_parquet(tasks), source=str(tasks))
        if recorded.is_file():
            crowd.save_settings(conn, json.loads(recorded.read_text()).get("crowd"))
    finally:
        conn.close()
    print(f"{tasks}: {counts['added']} tasks added, {counts['kept']} kept, {counts['retired']} unanswered retired "
          f"(answers are never removed)")


LOCAL_BASE = "http://127.0.0.1:8765"


def _links(db: Path, base: str | None, who: str | None = None) -> list[tuple[str, str, str]]:
    """(person, role, link) of everyone (or of ``who``), under ``base`` if given ("" gives bare paths), else
    under the ``--public-url`` the last ``serve`` was given (kept in the store), else this machine's address."""
    key = links.read_key(db)
    conn = store_db.connect(db)
    try:
        rows = conn.execute("SELECT person_id, role, epoch FROM people ORDER BY role, person_id").fetchall()
        if base is None:
            kept = conn.execute("SELECT value FROM meta WHERE key = 'public_url'").fetchone()
            base = kept["value"] if kept else LOCAL_BASE
    finally:
        conn.close()
    base = base.rstrip("/")
    return [(r["person_id"], r["role"], base + links.link_path(key, r["person_id"], r["role"], r["epoch"]))
            for r in rows if who is None or r["person_id"] == who]


def _operate(args) -> None:
    """answers, void, backup, restore (see the module's text)."""
    if args.command == "backup":
        print(f"backup: {backup.backup(args.db, args.folder)} (with its key)")
        return
    if args.command == "restore":
        backup.restore(args.backup, args.db, force=args.force)
        print(f"restored {args.backup} to {args.db}")
        return
    conn = store_db.connect(args.db)
    try:
        if args.command == "void":
            row = store.void(conn, args.task_id, args.reason)
            print(f"voided the {row['kind']} answer of {row['person_id']} to task {args.task_id}; it is served again")
            return
        answers = store.answers_frame(conn, active_only=False)
    finally:
        conn.close()
    if args.person:
        answers = answers[answers["person_id"] == args.person]
    for a in answers.itertuples():
        text = a.answer.get("text") or a.answer.get("rationale") or ",".join(a.answer.get("present", []))
        print(f"{a.task_id}\t{a.person_id}\t{a.kind}\t{a.item_id}\t{a.seconds:.1f}s\t{text[:60]!r}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m heart.annotation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", type=Path, default=None,
                        help=f"the store (default: {DEFAULT_DB}); its link key is <db>.key")
    p = sub.add_parser("init", parents=[common], help="create the store and load tasks")
    p.add_argument("--tasks", type=Path, default=Path("results/annotation/tasks.parquet"))
    p = sub.add_parser("serve", parents=[common], help="serve the pages")
    p.add_argument("--tasks", type=Path, default=None, help="load this task table first; the store and the "
                   "taxonomy not given default to the ones its config names (serve.json beside it)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: %(default)s, this machine "
                   "only; put a TLS reverse proxy in front to serve people elsewhere)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--taxonomy", type=Path, default=None, help=f"default: {DEFAULT_TAXONOMY}")
    p.add_argument("--public-url", default=None, help="the address people use, for the printed links "
                   "(behind a reverse proxy: its https address)")
    p.add_argument("--proxy", default=None, metavar="ADDR[,ADDR]", help="the reverse proxy's address(es): "
                   "X-Forwarded-For/-Proto are trusted from these peers only (default: from nobody)")
    base_help = ("the address the links start with (default: the --public-url of the last serve, kept in the "
                 f"store; before any, {LOCAL_BASE}, this machine only)")
    p = sub.add_parser("links", parents=[common], help="print every person's secret link")
    p.add_argument("--base", default=None, help=base_help)
    p = sub.add_parser("revoke", parents=[common], help="give a person a new link")
    p.add_argument("person_id")
    p.add_argument("--base", default=None, help=base_help)
    p = sub.add_parser("free", parents=[common], help="give a crowd participant's place back")
    p.add_argument("person_id")
    p.add_argument("--reason", default="freed by the coordinator", help="recorded in the audit log")
    p = sub.add_parser("answers", parents=[common], help="list answers, to find one to void")
    p.add_argument("--person", default=None, help="only this person's")
    p = sub.add_parser("void", parents=[common], help="withdraw one answer (audited); its task is served again")
    p.add_argument("task_id")
    p.add_argument("--reason", required=True, help="why (recorded in the audit log)")
    p = sub.add_parser("backup", parents=[common], help="copy the store and its key while serving")
    p.add_argument("folder", type=Path)
    p = sub.add_parser("restore", parents=[common], help="put a backup in place of the store")
    p.add_argument("backup", type=Path, help="the store file inside a backup folder")
    p.add_argument("--force", action="store_true", help="replace an existing store")
    p = sub.add_parser("export", parents=[common], help="write the import files")
    p.add_argument("--completions", type=Path, default=Path("resources/human/completions.csv"))
    p.add_argument("--judgments", type=Path, default=Path("resources/human/judgments.csv"))
    p.add_argument("--labels", type=Path, default=Path("resources/human/strategy_labels.csv"))
    p.add_argument("--reviews", type=Path, default=Path("resources/human/safety_reviews.csv"),
                   help="where the safety reviews go (config completions.safety_reviews)")
    p.add_argument("--taxonomy", type=Path, default=DEFAULT_TAXONOMY)
    return parser


def _init(args) -> None:
    _load(args.db, args.tasks)
    (coordinator,) = [link for _, role, link in _links(args.db, None) if role == links.COORDINATOR]
    print(f"store: {args.db}\ncoordinator page (secret): {coordinator}")


def _serve(args) -> None:
    # the store's serving lock, held from before the tasks load until the server stops: a restore (or a
    # second server) is refused while this one answers
    args.db.parent.mkdir(parents=True, exist_ok=True)
    with store_db.exclusive(args.db, "serve it"):
        _load(args.db, args.tasks)
        import uvicorn

        from heart.annotation.app import create_app
        from heart.annotation.guard import BoundedH11Protocol

        base = args.public_url or f"http://{args.host}:{args.port}"
        if args.public_url:  # links and revoke print links under it from now on
            conn = store_db.connect(args.db)
            try:
                with store_db.transaction(conn):
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('public_url', ?)", (base.rstrip("/"),))
            finally:
                conn.close()
        app = create_app(args.db, args.taxonomy, public_url=base)
        (coordinator,) = [link for _, role, link in _links(args.db, base) if role == links.COORDINATOR]
        print(f"coordinator page (secret; it lists everyone's link): {coordinator}", flush=True)
        # no access log (links are secrets); forwarded headers only from the named proxy; at most 512
        # connections and tasks at once (more get 503); idle connections closed after 5 s
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                    http=BoundedH11Protocol, proxy_headers=bool(args.proxy),
                    forwarded_allow_ips=args.proxy or "", limit_concurrency=512, timeout_keep_alive=5,
                    server_header=False)


def _print_links(args) -> None:
    for person, role, link in _links(args.db, args.base):
        print(f"{person}\t{role}\t{link}")


def _revoke(args) -> None:
    conn = store_db.connect(args.db)
    try:
        held = crowd.holds_place(conn, args.person_id)
        if held:  # a platform participant: the place goes back and the platform id may not enter again
            holder = crowd.release(conn, args.person_id, "revoked by the coordinator", block=True)
        else:
            links.revoke(conn, args.person_id)
    finally:
        conn.close()
    if held:
        print(f"{args.person_id}: link revoked, platform participant blocked; the place's unanswered tasks are "
              f"{holder}'s, for the next participant")
        return
    print(_links(args.db, args.base, args.person_id)[0][2])


def _free(args) -> None:
    conn = store_db.connect(args.db)
    try:
        holder = crowd.release(conn, args.person_id, args.reason)
    finally:
        conn.close()
    print(f"{args.person_id}: place given back ({args.reason}); its unanswered tasks are {holder}'s, for the next "
          "participant")


def _export(args) -> None:
    from heart.annotation import export
    from heart.tagging.taxonomy import load_taxonomy, strategy_keys

    keys = strategy_keys(load_taxonomy(args.taxonomy))
    for name, info in export.export(args.db, args.completions, args.judgments, args.labels, keys,
                                       reviews_path=args.reviews).items():
        print(f"{name}: {info}")


COMMANDS = {"init": _init, "serve": _serve, "links": _print_links, "revoke": _revoke, "free": _free,
            "answers": _operate,
            "void": _operate, "backup": _operate, "restore": _operate, "export": _export}


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    _defaults(args)
    try:
        COMMANDS[args.command](args)
    except (store_db.StoreError, OSError, ValueError) as exc:
        sys.exit(f"python -m heart.annotation {args.command}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
