"""Atomic file output, hashing, and Parquet tables checked against their declared schema.

Every table the workflow writes has a JSON schema in ``workflow/schemas/tables/``;
:func:`write_table` checks a DataFrame against it (columns, types, nulls), casts it
to the matching Arrow schema and writes it atomically, so that a failed or
interrupted job never leaves a partial Parquet file behind.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

TABLE_SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas" / "tables"


class TableSchemaError(ValueError):
    """A DataFrame does not match the declared schema of the table it is written as."""


@contextlib.contextmanager
def atomic_path(dest):
    """Yield a temporary path beside ``dest``; move it onto ``dest`` only if the block succeeds."""
    dest = Path(dest)
    if not dest.parent.is_dir():
        dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file ordinary permissions
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def format_path(parts) -> str:
    """A JSON location as people read it: ``["dialog", 4, "content"]`` -> ``dialog[4].content``."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def sha256_file(path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _arrow_type(spec: dict, where: str) -> tuple[pa.DataType, bool]:
    types = spec.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    nullable = "null" in types
    kinds = [t for t in types if t != "null"]
    if len(kinds) != 1:
        raise TableSchemaError(f"{where}: a column needs exactly one non-null type, got {types}")
    kind = kinds[0]
    if kind == "string":
        return pa.string(), nullable
    if kind == "integer":
        return pa.int64(), nullable
    if kind == "number":
        return pa.float64(), nullable
    if kind == "boolean":
        return pa.bool_(), nullable
    if kind == "array":
        item, _ = _arrow_type(spec["items"], f"{where}[]")
        return pa.list_(item), nullable
    if kind == "object":
        fields = []
        for name, sub in spec["properties"].items():
            t, n = _arrow_type(sub, f"{where}.{name}")
            fields.append(pa.field(name, t, nullable=n))
        return pa.struct(fields), nullable
    raise TableSchemaError(f"{where}: unsupported type {kind!r}")


@lru_cache(maxsize=None)
def table_schema(name: str) -> pa.Schema:
    """Arrow schema of table ``name`` from ``workflow/schemas/tables/<name>.schema.yaml``."""
    path = TABLE_SCHEMA_DIR / f"{name}.schema.yaml"
    spec = yaml.safe_load(path.read_text())
    fields = []
    for col, sub in spec["properties"].items():
        t, nullable = _arrow_type(sub, f"{path.name}: {col}")
        fields.append(pa.field(col, t, nullable=nullable))
    return pa.schema(fields, metadata={"heart.table": name})


def to_arrow(df: pd.DataFrame, name: str) -> pa.Table:
    """Check ``df`` against table ``name``'s schema and convert it; errors name the column."""
    schema = table_schema(name)
    missing = [f.name for f in schema if f.name not in df.columns]
    extra = [c for c in df.columns if c not in schema.names]
    if missing or extra:
        raise TableSchemaError(f"table {name}: missing columns {missing}, unexpected columns {extra}")
    arrays = []
    for field in schema:
        values = df[field.name]
        try:
            arr = pa.array(values.tolist(), type=field.type, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as exc:
            raise TableSchemaError(
                f"table {name}, column {field.name}: cannot be stored as {field.type}: {exc}"
            ) from None
        if not field.nullable and arr.null_count:
            row = int(pd.Series(arr.is_null().to_pylist()).idxmax())
            raise TableSchemaError(f"table {name}, column {field.name}: null in row {row}")
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


def empty_like(name: str) -> pd.DataFrame:
    """An empty DataFrame with table ``name``'s columns (for "nothing here" outputs)."""
    return pd.DataFrame(columns=table_schema(name).names)


def write_table(df: pd.DataFrame, path, name: str, provenance: dict | None = None) -> None:
    """Write ``df`` as table ``name`` to ``path`` atomically, with provenance in the file metadata."""
    table = to_arrow(df, name)
    meta = dict(table.schema.metadata or {})
    from heart.provenance import context

    provenance = {**context(), **(provenance or {})}
    if provenance:
        meta[b"heart.provenance"] = json.dumps(provenance, sort_keys=True, default=str).encode()
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_table(path) -> pd.DataFrame:
    """Read a Parquet table written by :func:`write_table` into pandas."""
    return pq.read_table(path).to_pandas()


def provenance_of(path) -> dict:
    """The provenance dict stored by :func:`write_table` (empty if none)."""
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"heart.provenance")
    return json.loads(raw) if raw else {}


def require_text(path, where: str, entry: dict, fields) -> None:
    """Each of ``fields`` of one entry of a versioned resource file is a non-empty string, else an
    error naming the file, the entry (``where``, e.g. ``"axes[2]"``) and the field."""
    for field in fields:
        if not isinstance(entry.get(field), str) or not entry[field].strip():
            raise ValueError(f"{path}: {where}.{field} must be a non-empty string")


def read_csv(path, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` whose parse errors name the file and the line and say what to check.

    Every record must have as many fields as the header: pandas would otherwise take an extra
    leading field as an index (an unquoted comma silently shifts the columns).
    """
    hint = "fields holding commas, quotes or line breaks must be double-quoted, and the file must be UTF-8"
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            for record in reader:
                if record and len(record) != len(header):
                    raise ValueError(f"{path}: line {reader.line_num} has {len(record)} fields, the header "
                                     f"{len(header)}; {hint}")
        return pd.read_csv(path, **kwargs)
    except (pd.errors.ParserError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path}: not a readable CSV file ({str(exc).strip()}); {hint}") from exc
