"""A Croissant descriptor (``croissant.json``) for a published table.

`Croissant <https://mlcommons.org/croissant/>`_ is the MLCommons metadata
format for machine-learning datasets (JSON-LD over schema.org), read by
Hugging Face, Kaggle, OpenML and the NeurIPS datasets track. Each built table
gets one beside its ``datapackage.json``: the dataset's name, description,
licence, citation and homepage; the Parquet file with its SHA-256; and one
record set whose fields are the table's columns with their types.

The JSON-LD is written by hand, so that building a table never needs
``mlcroissant``; the tests validate it with ``mlcroissant`` and load the
records through it.

Every ``@id`` is derived from a name by :func:`node_id`, which percent-encodes
all but ASCII letters, digits, ``_`` and ``-``: a column may be named
``acc x``, ``a/b`` or ``é`` (mlcroissant refuses an ``@id`` holding a space,
and ``/``, ``#``, ``?`` or ``..`` would change what the IRI points to), and
the encoding is one-to-one, so two columns never share an ``@id``. The
``name`` of each node stays the original text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: The Croissant version written (``conformsTo``).
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"

#: The JSON-LD context of Croissant 1.0, as its specification gives it.
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

PARQUET_TYPE = "application/x-parquet"
# Characters an @id keeps as they are; every other one is percent-encoded (UTF-8).
_ID_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def node_id(name: object) -> str:
    """An ``@id`` segment for ``name``: its UTF-8 bytes, percent-encoded but for ``[A-Za-z0-9_-]``.

    One-to-one (``unquote`` gives the name back), so distinct names give
    distinct ids; ``.`` and ``~`` are encoded too, so that no id reads as a
    relative path (``.``, ``..``).
    """
    return "".join(
        c if c in _ID_SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in str(name)
    )


def croissant_type(dtype: Any) -> str:
    """The Croissant ``dataType`` of a column: ``sc:Integer``, ``sc:Float`` or ``sc:Text``."""
    if pd.api.types.is_bool_dtype(dtype):
        return "sc:Boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "sc:Integer"
    if pd.api.types.is_float_dtype(dtype):
        return "sc:Float"
    return "sc:Text"


def croissant(
    table: pd.DataFrame, parquet_name: str, parquet_sha256: str, provenance: dict[str, Any]
) -> dict[str, Any]:
    """The Croissant 1.0 descriptor of a published table, as a JSON-ready dict.

    Parameters
    ----------
    table : DataFrame
        The published table (its columns and dtypes give the fields).
    parquet_name : str
        The Parquet file's name, relative to the descriptor.
    parquet_sha256 : str
        SHA-256 of the Parquet file's bytes.
    provenance : dict
        What :func:`mudata.building.pipeline.build` recorded (name, title, licence,
        citation, homepage, classes, counts).
    """
    name = provenance["dataset"]
    set_id = node_id(name)
    file_id = node_id(parquet_name)
    fields = [
        {
            "@type": "cr:Field",
            "@id": f"{set_id}/{node_id(column)}",
            "name": str(column),
            "description": _field_description(str(column), provenance),
            "dataType": croissant_type(dtype),
            "source": {"fileObject": {"@id": file_id}, "extract": {"column": str(column)}},
        }
        for column, dtype in table.dtypes.items()
    ]
    counts = provenance.get("counts", {})
    # A table written outside mudata.building.pipeline.build (a precomputed table, a
    # benchmark) may carry no recipe: the description then names none.
    recipe = provenance.get("recipe") or {}
    made = (
        f"Recipe {recipe.get('name', '?')} version {recipe.get('version', '?')}. " if recipe else ""
    )
    description = (
        f"{provenance['title']}: the feature table built by mudata "
        f"({counts.get('rows', len(table))} rows, {counts.get('users', '?')} users, "
        f"{len(provenance['classes'])} classes). {made}The full provenance is in "
        f"datapackage.json and in the Parquet file's metadata."
    )
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": name,
        "alternateName": provenance["title"],
        "description": description,
        "url": provenance["homepage"],
        "license": _licence(provenance),
        "citeAs": provenance["citation"].strip(),
        "version": _semver(provenance.get("dataset_version")),
        # The table is published when it is built (the release's own date is not recorded).
        "datePublished": str(provenance.get("built", ""))[:10],
        "keywords": ["human activity recognition", "multi-user", "mudata"],
        "distribution": [
            {
                "@type": "cr:FileObject",
                "@id": file_id,
                "name": file_id,
                "description": "The feature table, one row per window (userid, label, features).",
                "contentUrl": parquet_name,
                "encodingFormat": PARQUET_TYPE,
                "sha256": parquet_sha256,
            }
        ],
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "@id": set_id,
                "name": name,
                "description": "The table's rows, in file order.",
                "field": fields,
            }
        ],
    }


def _field_description(column: str, provenance: dict[str, Any]) -> str:
    if column == "userid":
        return "The user id, as text (as the release names the user)."
    if column == "label":
        return "The activity class: one of " + ", ".join(provenance["classes"]) + "."
    return "A feature (float64)."


def _licence(provenance: dict[str, Any]) -> str:
    """An address for an SPDX id, else the licence's own path or its id and title."""
    licence = str(provenance["licence"])
    if not licence.startswith("LicenseRef-"):
        return f"https://spdx.org/licenses/{licence}.html"
    return provenance.get("licence_path") or f"{licence}: {provenance.get('licence_title') or ''}"


def _semver(version: Any) -> str:
    """Croissant asks for MAJOR.MINOR.PATCH: "1.1" becomes "1.1.0"; other forms are kept."""
    text = str(version or "0.0.0")
    parts = text.split(".")
    if all(p.isdigit() for p in parts) and 1 <= len(parts) < 3:
        return ".".join(parts + ["0"] * (3 - len(parts)))
    return text


__all__ = ["CONFORMS_TO", "CONTEXT", "PARQUET_TYPE", "croissant", "croissant_type", "node_id"]
