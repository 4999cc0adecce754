"""The sharded-TFRecords example's training code (see task.py)."""
