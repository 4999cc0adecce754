"""``python -m cloudtrain_runtime``: the same as the ``cloudtrain-runtime`` console script."""

from cloudtrain_runtime.main import main

main()
