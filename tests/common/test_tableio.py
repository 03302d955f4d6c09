"""heart.common.tableio: tables are checked against their schema and written atomically."""

import os

import pandas as pd
import pytest

from heart import WORKFLOW_DIR
from heart.common import atomic, tableio


def source_df(**over):
    row = dict(path="x.json", sha256="a" * 64, bytes=10, n_conversations=1,
               speaker_vocabulary="seeker/supporter", upstream_sha256=None, matches_upstream=None)
    row.update(over)
    return pd.DataFrame([row])


def test_roundtrip_with_provenance(tmp_path):
    out = tmp_path / "sub" / "t.parquet"
    tableio.write_table(source_df(), out, "esconv_source", {"esconv_sha256": "a" * 64})
    back = tableio.read_table(out)
    assert back.loc[0, "bytes"] == 10 and pd.isna(back.loc[0, "upstream_sha256"])
    assert tableio.provenance_of(out) == {"esconv_sha256": "a" * 64}
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    assert [p.name for p in out.parent.iterdir()] == ["t.parquet"]  # no temp file left


def _umask():
    u = os.umask(0)
    os.umask(u)
    return u


@pytest.mark.parametrize("df, message", [
    (source_df().drop(columns="bytes"), r"table esconv_source: missing columns \['bytes'\]"),
    (source_df(extra=1), r"unexpected columns \['extra'\]"),
    (source_df(bytes="ten"), r"table esconv_source, column bytes: cannot be stored as int64"),
    (source_df(sha256=None), r"table esconv_source, column sha256: null in row 0"),
])
def test_schema_violations_name_the_column(tmp_path, df, message):
    out = tmp_path / "t.parquet"
    with pytest.raises(tableio.TableSchemaError, match=message):
        tableio.write_table(df, out, "esconv_source")
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_atomic_path_leaves_old_file_on_failure(tmp_path):
    out = tmp_path / "t.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(out) as tmp:
            open(tmp, "w").write("half")
            raise RuntimeError("interrupted")
    assert out.read_text() == "old" and list(tmp_path.iterdir()) == [out]


@pytest.mark.parametrize("resource, listed, field, load", [
    ("rubric/heart.yaml", "axes", "high", "heart.judging.material:load_rubric"),
    ("taxonomy/strategies.yaml", "strategies", "definition", "heart.tagging.taxonomy:load_taxonomy"),
    ("codebook/rationales.yaml", "codes", "micro_skill", "heart.stats.rationales:load_codebook"),
])
def test_a_blank_field_of_a_versioned_resource_names_file_entry_and_field(tmp_path, resource, listed, field, load):
    import importlib
    import re
    from pathlib import Path

    import yaml

    module, func = load.split(":")
    loader = getattr(importlib.import_module(module), func)
    src = WORKFLOW_DIR / "resources" / resource
    doc = yaml.safe_load(src.read_text())
    loader(src)  # the shipped file passes
    doc[listed][1][field] = "   "
    bad = tmp_path / Path(resource).name
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))}: {listed}\[1\]\.{field} must be a non-empty string"):
        loader(bad)
    del doc[listed][1][field]
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=rf"{listed}\[1\]\.{field} must be a non-empty string"):
        loader(bad)
