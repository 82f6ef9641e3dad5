"""The fault campaign (campaign.py): a short one in the default suite, the long one of
docs/reliability.md under `-m slow`. Every trial finishes by rerunning the same command and
ends identical to the uninterrupted run; no user file is lost, no process has a traceback."""
import re
import subprocess
import sys

import pytest

from tests.training import runs

CAMPAIGN = str(runs.REPO_ROOT / 'tests' / 'reliability' / 'campaign.py')
SUMMARY = re.compile(r'^faults (\d+), trials (\d+), identical (\d+), different (\d+), '
                     r'unfinished (\d+), user files lost (\d+), tracebacks (\d+)$', re.M)


def _campaign(faults, seed, timeout, per_trial):
  result = subprocess.run([sys.executable, CAMPAIGN, f'--faults={faults}', f'--seed={seed}',
                           f'--max_faults_per_trial={per_trial}'],
                          capture_output=True, text=True, env=runs.environment(),
                          cwd=str(runs.REPO_ROOT), timeout=timeout)
  assert result.returncode == 0, result.stdout + result.stderr[-3000:]
  match = SUMMARY.search(result.stdout)
  assert match, result.stdout
  fired, trials, identical, different, unfinished, lost, tracebacks = map(int, match.groups())
  assert fired >= faults, result.stdout
  assert (different, unfinished, lost, tracebacks) == (0, 0, 0, 0), result.stdout
  assert identical == trials, result.stdout


@pytest.mark.integration
def test_a_short_campaign_finishes_every_trial_identically():
  _campaign(faults=2, seed=1, timeout=900, per_trial=2)


@pytest.mark.slow
def test_the_long_campaign_finishes_every_trial_identically():
  _campaign(faults=100, seed=0, timeout=4 * 3600, per_trial=4)
