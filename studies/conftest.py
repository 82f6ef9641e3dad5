"""The studies' tests share the library tests' per-file process state (tests/conftest.py)."""
from tests.conftest import _process_state_per_module  # pylint: disable=unused-import
