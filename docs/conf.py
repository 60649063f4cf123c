"""Sphinx configuration of the mudata and mueval documentation.

Build from the project root (``.ci/run`` does, with warnings as errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The gallery runs every script of ``examples/`` on the official files in
``$MUDATA_SHARED_DATA`` (default ``../shared/data`` seen from the project root).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mudata
import mueval

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# The local extension that renders the registry's JSON Schema (docs/_ext).
sys.path.insert(0, str(DOCS / "_ext"))

project = "mudata and mueval"
author = "the mudata and mueval authors"
copyright = "the mudata and mueval authors, BSD-3-Clause"
version = release = mueval.__version__
assert mudata.__version__ == mueval.__version__, "one release, one version"

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx_gallery.gen_gallery",
    "registry_schema",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "auto_examples/*.ipynb"]
templates_path = ["_templates"]

# MyST: the Markdown pages link to each other's sections by their slugs.
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

# The API reference: one generated page per public name (docs/reference/generated).
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Types stay text: their cross-references would need intersphinx inventories,
# and the build must not need the network.
numpydoc_xref_param_type = False
# Every parameter of a public function documented, and no other (the build's
# -W makes a gap an error). Run is a dataclass: its fields are its Attributes.
numpydoc_validation_checks = {"PR01", "PR02"}
numpydoc_validation_exclude = {r"^mueval\.Run$"}

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "matplotlib_animations": False,
    "abort_on_example_error": False,
    # Measured by .ci/run around the whole build; a page of its own would land
    # in the guides' glob toctree.
    "write_computation_times": False,
}

html_theme = "pydata_sphinx_theme"
html_title = "mudata and mueval"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


def _public_signature(app, what, name, obj, options, signature, return_annotation):
    """Leave private dataclass fields (``Run._arrow``) out of a documented signature."""
    if what != "class" or not signature:
        return None
    parameters = [p.strip() for p in signature.strip("()").split(",")]
    public = [p for p in parameters if p and not p.startswith("_")]
    return f"({', '.join(public)})", return_annotation


def setup(app) -> None:
    app.connect("autodoc-process-signature", _public_signature)
