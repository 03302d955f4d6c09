"""heart-annotate: collect human data for HEART (``python -m heart.annotation --help``).

    init    create the store (SQLite + link key) and load the task table
    serve   load the task table (if given) and serve the pages on 127.0.0.1
    links   print every person's secret link
    revoke  give one person a new link (the old one stops working)
    export  write the import files (rule export_annotations does this inside the workflow)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from heart import WORKFLOW_DIR
from heart.annotation import store

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
    store.create(db)
    if tasks is None:
        return
    if not tasks.exists():
        sys.exit(f"{tasks} does not exist: make it with `snakemake --cores 2 annotation_tasks` "
                 "(or `make annotation-tasks`)")
    conn = store.connect(db)
    try:
        counts = store.load_tasks(conn, pd.read_parquet(tasks), source=str(tasks))
    finally:
        conn.close()
    print(f"{tasks}: {counts['added']} tasks added, {counts['kept']} kept, {counts['retired']} unanswered retired "
          f"(answers are never removed)")


def _links(db: Path, base: str, who: str | None = None) -> list[tuple[str, str, str]]:
    key = store.read_key(db)
    conn = store.connect(db)
    try:
        rows = conn.execute("SELECT person_id, role, epoch FROM people ORDER BY role, person_id").fetchall()
    finally:
        conn.close()
    return [(r["person_id"], r["role"], base + store.link_path(key, r["person_id"], r["role"], r["epoch"]))
            for r in rows if who is None or r["person_id"] == who]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="heart-annotate", description=__doc__,
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
    p.add_argument("--public-url", default=None, help="the address people use, for the printed links")
    p = sub.add_parser("links", parents=[common], help="print every person's secret link")
    p.add_argument("--base", default="http://127.0.0.1:8765")
    p = sub.add_parser("revoke", parents=[common], help="give a person a new link")
    p.add_argument("person_id")
    p.add_argument("--base", default="http://127.0.0.1:8765")
    p = sub.add_parser("export", parents=[common], help="write the import files")
    p.add_argument("--completions", type=Path, default=Path("resources/human/completions.csv"))
    p.add_argument("--judgments", type=Path, default=Path("resources/human/judgments.csv"))
    p.add_argument("--labels", type=Path, default=Path("resources/human/strategy_labels.csv"))
    p.add_argument("--taxonomy", type=Path, default=DEFAULT_TAXONOMY)
    args = parser.parse_args(argv)
    _defaults(args)

    try:
        if args.command == "init":
            _load(args.db, args.tasks)
            (coordinator,) = [link for _, role, link in _links(args.db, "http://127.0.0.1:8765")
                              if role == store.COORDINATOR]
            print(f"store: {args.db}\ncoordinator page (secret): {coordinator}")
        elif args.command == "serve":
            _load(args.db, args.tasks)
            import uvicorn

            from heart.annotation.app import create_app

            base = args.public_url or f"http://{args.host}:{args.port}"
            app = create_app(args.db, args.taxonomy, public_url=args.public_url)
            (coordinator,) = [link for _, role, link in _links(args.db, base) if role == store.COORDINATOR]
            print(f"coordinator page (secret; it lists everyone's link): {coordinator}", flush=True)
            uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
        elif args.command == "links":
            for person, role, link in _links(args.db, args.base):
                print(f"{person}\t{role}\t{link}")
        elif args.command == "revoke":
            conn = store.connect(args.db)
            try:
                store.revoke(conn, args.person_id)
            finally:
                conn.close()
            print(_links(args.db, args.base, args.person_id)[0][2])
        elif args.command == "export":
            from heart.annotation import export
            from heart.tagging.taxonomy import load_taxonomy, strategy_keys

            keys = strategy_keys(load_taxonomy(args.taxonomy))
            for name, info in export.export(args.db, args.completions, args.judgments, args.labels, keys).items():
                print(f"{name}: {info}")
    except (store.StoreError, OSError, ValueError) as exc:
        sys.exit(f"heart-annotate {args.command}: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
