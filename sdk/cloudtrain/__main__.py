"""``python -m cloudtrain`` is the ``cloudtrain`` command."""

from cloudtrain.cli import main

main()
