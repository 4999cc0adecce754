"""The tuning example's training code (see task.py)."""
