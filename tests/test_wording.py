"""The docs, the code and the tests speak of the product: no issue numbers, nothing about
who worked on it or on which machine (README.md, BUILD.md, docs/, gin/, bin/, tf_ipmssl/,
tests/). Lines are joined first, so a phrase broken over two lines is found too."""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PLACES = ('README.md', 'BUILD.md', 'docs', 'gin', 'bin', 'tf_ipmssl', 'tests')
TEXT_SUFFIXES = {'', '.md', '.py', '.gin', '.sh', '.txt', '.ini', '.cfg', '.toml', '.yaml',
                 '.yml'}
# Written in pieces, so that this file does not match itself.
FORBIDDEN = [re.compile(pattern, re.IGNORECASE) for pattern in (
    r'\bissue' + r's? #?\d+',
    r"\bthe issue" + r"'s\b",
    r'\(issue' + r':',
    r'lent to' + r' this project',
    r'the last session' + r' measured',
    r'\bthis session' + r'\b',
)]


def _files():
  for place in PLACES:
    path = REPO / place
    candidates = [path] if path.is_file() else sorted(path.rglob('*'))
    for candidate in candidates:
      if (candidate.is_file() and candidate.suffix in TEXT_SUFFIXES
          and '__pycache__' not in candidate.parts):
        yield candidate


def test_the_places_exist():
  assert all((REPO / place).exists() for place in PLACES)


@pytest.mark.parametrize('place', PLACES)
def test_no_issue_numbers_or_talk_of_the_environment(place):
  found = []
  for path in _files():
    if not path.relative_to(REPO).as_posix().startswith(place):
      continue
    text = ' '.join(path.read_text(errors='replace').split())
    for pattern in FORBIDDEN:
      for match in pattern.finditer(text):
        found.append(f'{path.relative_to(REPO)}: ...{text[max(0, match.start() - 40):match.end() + 20]}...')
  assert not found, '\n'.join(found)
