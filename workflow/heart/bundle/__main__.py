"""``python -m heart.bundle check <folder> [--write-manifest]``: check a bundle before a run from it (``make
check-bundle ARTIFACTS=<folder>``; ``make paper`` runs it first); ``--write-manifest`` first writes the
manifest of a folder made by hand. See heart.bundle.check."""

from __future__ import annotations

import argparse
import sys

from heart.bundle import check, load


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m heart.bundle", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="check every file and cross-reference of a bundle, then say what it holds")
    c.add_argument("folder")
    c.add_argument("--write-manifest", action="store_true",
                   help="first write manifest.json for a folder made by hand (every bundle file in it, its sha256)")
    args = parser.parse_args(argv)
    try:
        if args.write_manifest:
            written = check.write_manifest(args.folder)
            print(f"{args.folder}/manifest.json: {len(written['files'])} files listed"
                  + (f"; not bundle files, left out: {', '.join(written['not_listed'])}" if written["not_listed"]
                     else ""))
        summary = check.check(args.folder)
    except load.BundleError as exc:
        print(f"heart-bundle: {exc}", file=sys.stderr)
        return 1
    print(f"{args.folder}: a bundle make paper can run\n{check.describe(summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
