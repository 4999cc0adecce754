"""The managed-mode contract: the functions of the user's module the runtime calls.

Each function and the one argument the runtime passes it. The SDK checks a project
against this before a job starts (``cloudtrain.usercode``, by parsing, never
importing), the runtime calls exactly these (``managed``), and the documentation's
"Your training code" page states them (a test reads all three). Standard library only.

Example:
>>> REQUIRED
{'build_model': 'config', 'make_dataset': 'context'}
"""

from __future__ import annotations

SIGNATURES = {
    "build_model": "config",
    "make_dataset": "context",
    "make_validation_dataset": "context",
    "compile_args": "config",
    "make_optimizer": "learning_rate",
}
REQUIRED = {name: SIGNATURES[name] for name in ("build_model", "make_dataset")}
OPTIONAL = tuple(name for name in SIGNATURES if name not in REQUIRED)
