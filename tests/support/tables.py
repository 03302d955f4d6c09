"""Hand-built tables with the workflow's schema dtypes."""

from __future__ import annotations

import pandas as pd

from heart.common.vocabulary import AXIS_COLUMNS

#: The signed axis-mark columns of the judgments table (workflow/schemas/tables/judgments.schema.yaml).
JUDGMENT_AXES = list(AXIS_COLUMNS)


def judgments_frame(rows) -> pd.DataFrame:
    """A hand-built judgments table with the schema's dtypes (nullable integers, boolean ``flipped``)."""
    df = pd.DataFrame(rows)
    for col in ("strength", "preference", "n_orders", *JUDGMENT_AXES):
        df[col] = df[col].astype("Int64")
    df["flipped"] = df["flipped"].astype("boolean")
    df["winner"] = df["winner"].astype(object).where(df["winner"].notna(), None)
    return df
