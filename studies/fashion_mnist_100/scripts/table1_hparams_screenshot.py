"""Screenshots TensorBoard's HParams table of a logdir with headless Chromium.

  .venv/bin/python studies/fashion_mnist_100/scripts/table1_hparams_dashboard.py /tmp/t1
  .venv/bin/python studies/fashion_mnist_100/scripts/table1_hparams_screenshot.py /tmp/t1 OUT.png

Starts a TensorBoard on localhost and Chromium (`apt-get install chromium`), shows the
columns named in COLUMNS, sorts by the test error, saves the page as a PNG and stops both
by their PIDs. Chromium is driven over its DevTools pipe (no extra package).
"""
import base64
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *['..'] * 3))
from tests import local_server  # pylint: disable=g-import-not-at-top

COLUMNS = ('cell', 'constraints', 'ssl.formulation', 'seed')
METRICS = ('test_error', 'wall_seconds')
# Shows COLUMNS and METRICS in the dashboard's query pane (a Polymer element in shadow
# roots), sorts by test_error, ascending; returns how many rows the table shows.
SCRIPT = """
(() => {
  const found = [];
  const walk = (node) => {
    if (node.tagName === 'TF-HPARAMS-QUERY-PANE') found.push(node);
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.children || []) walk(child);
  };
  walk(document.documentElement);
  if (!found.length) return -1;
  const pane = found[0];
  pane._hparams.forEach((h, i) =>
      pane.set('_hparams.' + i + '.displayed', %(columns)s.includes(h.info.name)));
  pane._metrics.forEach((m, i) =>
      pane.set('_metrics.' + i + '.displayed', %(metrics)s.includes(m.info.name.tag)));
  const sortBy = pane._metrics.findIndex((m) => m.info.name.tag === 'test_error');
  pane._sortDirection = 0;
  pane._sortByIndex = pane._hparams.length + sortBy;
  return pane._hparams.length;
})()
"""


class DevTools:
  """Chromium's DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

  def __init__(self, command):
    to_chrome, self._write = os.pipe()
    self._read, from_chrome = os.pipe()
    def child():  # dup2's copies are inheritable; the pipes themselves are not.
      ends = os.dup(to_chrome), os.dup(from_chrome)  # Neither is 3 or 4 then.
      os.dup2(ends[0], 3)
      os.dup2(ends[1], 4)
    self.process = subprocess.Popen(command + ['--remote-debugging-pipe', 'about:blank'],
                                    close_fds=False, preexec_fn=child,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_chrome)
    os.close(from_chrome)
    self._buffer, self._id = b'', 0

  def call(self, method, session=None, **params):
    self._id += 1
    message = {'id': self._id, 'method': method, 'params': params}
    if session:
      message['sessionId'] = session
    os.write(self._write, json.dumps(message).encode() + b'\0')
    while True:
      while b'\0' not in self._buffer:
        chunk = os.read(self._read, 1 << 20)
        if not chunk:
          raise RuntimeError(f'Chromium closed its DevTools pipe during {method}')
        self._buffer += chunk
      text, self._buffer = self._buffer.split(b'\0', 1)
      reply = json.loads(text)
      if reply.get('id') == self._id:
        if 'error' in reply:
          raise RuntimeError(f'{method}: {reply["error"]}')
        return reply['result']


def main(logdir, out, width=2000, height=1400):
  chrome = None
  with local_server.tensorboard(logdir) as url:
    try:
      time.sleep(10)  # TensorBoard loads the logdir.
      chrome = DevTools(['chromium', '--headless', '--no-sandbox', '--disable-gpu',
                         '--disable-background-networking', '--disable-dev-shm-usage',
                         '--hide-scrollbars', f'--window-size={width},{height}'])
      target = chrome.call('Target.createTarget', url=f'{url}/#hparams')
      session = chrome.call('Target.attachToTarget', targetId=target['targetId'],
                            flatten=True)['sessionId']
      chrome.call('Emulation.setDeviceMetricsOverride', session, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
      script = SCRIPT % {'columns': json.dumps(COLUMNS), 'metrics': json.dumps(METRICS)}
      for _ in range(60):
        time.sleep(1)
        result = chrome.call('Runtime.evaluate', session, expression=script)
        if result['result'].get('value', -1) > 0:
          break
      else:
        raise RuntimeError('the HParams dashboard did not load')
      time.sleep(5)  # The table re-queries the session groups.
      shot = chrome.call('Page.captureScreenshot', session, format='png')
      with open(out, 'wb') as f:
        f.write(base64.b64decode(shot['data']))
      print(f'wrote {out}')
    finally:
      if chrome:
        local_server.stop(chrome.process)


if __name__ == '__main__':
  if len(sys.argv) != 3:
    sys.exit('usage: hparams_screenshot.py LOGDIR OUT.png')
  main(sys.argv[1], sys.argv[2])
