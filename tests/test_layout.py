"""The test tree imports under ``tests.``, so no test package shadows a real one.

pytest's default import mode puts the first folder without an ``__init__.py`` above a
test file on ``sys.path`` and imports the file's package from there. A test folder named
``sagemaker`` under such a folder became the top-level ``sagemaker`` package and hid the
SageMaker SDK from every test that imported it afterwards.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_folder_holding_tests_is_a_package_up_to_the_root() -> None:
    holders = {path.parent for pattern in ("test_*.py", "conftest.py") for path in TESTS.rglob(pattern)}
    folders = {
        folder for holder in holders for folder in (holder, *holder.parents) if folder.is_relative_to(TESTS)
    }
    missing = sorted(
        str(folder.relative_to(TESTS.parent)) for folder in folders if not (folder / "__init__.py").is_file()
    )
    assert missing == []
