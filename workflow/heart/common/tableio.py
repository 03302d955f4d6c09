"""Parquet tables checked against their declared schema.

Every table the workflow writes has a JSON schema in ``workflow/schemas/tables/``;
:func:`write_table` checks a DataFrame against it (columns, types, nulls), casts it
to the matching Arrow schema and writes it atomically, so that a failed or
interrupted job never leaves a partial Parquet file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from heart.common.atomic import move_all, ordinary_permissions, temp_beside
from heart import WORKFLOW_DIR

TABLE_SCHEMA_DIR = WORKFLOW_DIR / "schemas" / "tables"


class TableSchemaError(ValueError):
    """A DataFrame does not match the declared schema of the table it is written as."""


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


def _prepared(df: pd.DataFrame, name: str, provenance: dict | None) -> pa.Table:
    table = to_arrow(df, name)
    meta = dict(table.schema.metadata or {})
    if provenance:
        meta[b"heart.provenance"] = json.dumps(provenance, sort_keys=True, default=str).encode()
    return table.replace_schema_metadata(meta)


def write_table(df: pd.DataFrame, path, name: str, provenance: dict | None = None) -> None:
    """Write ``df`` as table ``name`` to ``path`` atomically, with provenance in the file metadata."""
    write_tables([(df, path, name)], provenance)


def write_tables(tables, provenance: dict | None = None) -> None:
    """Write several ``(df, path, name)`` tables all or none.

    Every table is checked and written to a temporary file beside its path first; only when all of them
    succeeded are they moved onto their paths, in order. Should a move fail (a full disk, a directory
    in the way), the tables already moved are taken back: a path that held an older file gets it back
    (kept as a hard link until the end), one that held nothing is removed. Only a kill between two
    renames can leave a mix, as with any set of files.
    """
    prepared = [(_prepared(df, name, provenance), Path(path)) for df, path, name in tables]
    temps = []
    try:
        for table, path in prepared:
            temps.append(temp_beside(path))
            pq.write_table(table, temps[-1])
            ordinary_permissions(temps[-1])
        move_all(list(zip(temps, (p for _, p in prepared))))
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def read_table(path) -> pd.DataFrame:
    """Read a Parquet table written by :func:`write_table` into pandas."""
    return pq.read_table(path).to_pandas()


def read_tables(paths, name: str) -> pd.DataFrame:
    """Tables of one schema read and stacked; none (e.g. no completions in an analysis-only run): an empty one."""
    frames = [read_table(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else empty_like(name)


def provenance_of(path) -> dict:
    """The provenance dict stored by :func:`write_table` (empty if none)."""
    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(b"heart.provenance")
    return json.loads(raw) if raw else {}
