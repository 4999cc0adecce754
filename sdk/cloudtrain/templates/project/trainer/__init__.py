"""The training code of ${name} (see task.py)."""
