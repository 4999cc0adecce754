"""The binary-classifier example's training code (see task.py)."""
