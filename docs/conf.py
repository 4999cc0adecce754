"""Sphinx configuration of the cloudtrain documentation.

Build it with ``make docs`` (``sphinx-build -W --keep-going``: a warning fails the build);
the pages are Markdown (MyST), the references are generated (``_ext/reference.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "cloudtrain"
author = "cloudtrain authors"
copyright = "cloudtrain authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
    "reference",
]

# What the generated references read, in one place: a module that moves is one line here.
cloudtrain_reference = {
    "cli": "cloudtrain.cli:cli",  # the click group; every command and option
    "api": "cloudtrain",  # the public names, cloudtrain.__all__
    "api-module": "cloudtrain.api",  # the functions behind them
    "provider-api": "cloudtrain.provider",  # the provider interface a plugin implements
    "spec": "cloudtrain.spec:JobSpec",  # the model whose JSON Schema `cloudtrain schema` prints
}

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = "cloudtrain"
