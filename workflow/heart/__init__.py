"""heart: the HEART benchmark's library, one subpackage per stage of the workflow (workflow/README.md)."""

from pathlib import Path

#: ``workflow/``: holds this package, its ``schemas/`` and its ``resources/``
WORKFLOW_DIR = Path(__file__).resolve().parent.parent
