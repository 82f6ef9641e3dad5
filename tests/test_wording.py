"""The docs, the code and the tests speak of the product: no issue numbers, nothing about
who worked on it or on which machine, no path of one (README.md, BUILD.md, docs/, gin/,
bin/, scripts/, tf_ipmssl/, tests/). Lines are joined first, so a phrase broken over two
lines is found too."""
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PLACES = ('README.md', 'BUILD.md', 'docs', 'gin', 'bin', 'studies', 'tf_ipmssl', 'tests')
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
    r"other engineer" + r"s'? jobs",
    r'the 10-minute' + r' budget',
    r'nothing could' + r' be installed',
    r'/work' + r'/(main|sweeps|wt)\b',
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
        context = text[max(0, match.start() - 40):match.end() + 20]
        found.append(f'{path.relative_to(REPO)}: ...{context}...')
  assert not found, '\n'.join(found)


def _section(text, heading):
  """The lines of a markdown section, from its heading to the next heading of its level."""
  lines = text.splitlines()
  start = lines.index(heading)
  level = heading.split(' ')[0]
  end = next((i for i in range(start + 1, len(lines))
              if lines[i].split(' ')[0] == level), len(lines))
  return lines[start:end]


def _prose_numbers(paragraph):
  """Numbers a reader sees in a paragraph: code, inline code and link targets left out."""
  text = re.sub(r'`[^`]*`', '', paragraph)
  text = re.sub(r'\]\([^)]*\)', ']', text)
  return re.findall(r'\d+(?:[.,–]\d+)*', text)


@pytest.mark.parametrize('heading', ['## What is reproduced',
                                     '## Does the gain survive data as users have it?'])
def test_readme_results_fit_on_one_screen(heading):
  lines = _section((REPO / 'README.md').read_text(), heading)
  while lines and not lines[-1].strip():
    lines.pop()
  assert len(lines) <= 25, len(lines)
  text = re.sub(r'```.*?```', '', '\n'.join(lines), flags=re.DOTALL)
  # A paragraph, or one item of a list (a verdict line), is one reading unit.
  for paragraph in re.split(r'\n\s*\n|\n(?=- )', text):
    assert len(_prose_numbers(paragraph)) <= 10, paragraph


def test_the_quickstart_time_is_one_figure_everywhere():
  """README and the results page give the measured 427 s; code and gin comments give no
  machine's timing (they point to the page)."""
  figure = '427 s on an AMD EPYC with AVX-512'
  assert figure in ' '.join((REPO / 'README.md').read_text().split())
  timing = re.compile(r'\b\d[\d,.]* ?(s|seconds?|min(utes?)?|h|hours?) on an? [A-Z]')
  for path in sorted((REPO / 'gin').rglob('*.gin')) + sorted((REPO / 'tf_ipmssl').rglob('*.py')):
    assert not timing.search(' '.join(path.read_text().replace('#', ' ').split())), path
  page = (REPO / 'docs/results/table1_fashion_mnist_100.md').read_text()
  assert '**427 s**' in page
  assert not re.search(r'quickstart[^.]*\b(\d+ min(ute)?s?|\d[\d,]* s)\b',
                       ' '.join(page.split()).replace('427 s', ''))
