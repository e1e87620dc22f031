"""The Trainer's progress (modules/training/callbacks.py) on a tiny Keras
model: one log line per epoch always, and a live bar only on a terminal."""

import fcntl
import os
import pty
import re
import struct
import termios
import threading

import numpy as np
import pytest
import tf_keras as keras

from modules.training import model as model_lib
from modules.training import callbacks
from tests.absl_lines import absl_lines


@pytest.fixture
def epoch_lines():
  with absl_lines(callbacks.EPOCH_LINE) as lines:
    yield lines


def _fit(callback, epochs=2):
  model = keras.Sequential([keras.layers.Dense(2)])
  model_lib.steps_without_autograph(model)  # Seconds less of tracing.
  model.compile(optimizer='sgd', loss='mse', metrics=['mae'])
  x = np.zeros((40, 3), np.float32)
  model.fit(x, np.zeros((40, 2), np.float32), batch_size=8, epochs=epochs,
            validation_data=(x[:8], np.zeros((8, 2), np.float32)),
            callbacks=[callback], verbose=0)


def test_a_line_per_epoch_and_no_bar_off_a_terminal(epoch_lines, tmp_path):
  with open(tmp_path / 'log', 'w') as not_a_terminal:
    _fit(callbacks.EpochProgress(8, bar_stream=not_a_terminal))
  assert (tmp_path / 'log').read_text() == ''  # No bar.
  assert len(epoch_lines) == 2
  for epoch, line in enumerate(epoch_lines, 1):
    assert re.fullmatch(
        rf'Epoch {epoch}/2: 5 steps, 40 examples in \d+\.\ds '
        r'\([\d,]+ examples/s\); loss \d\.\d{4}, mae \d\.\d{4}, '
        r'val_loss \d\.\d{4}, val_mae \d\.\d{4}', line), line


@pytest.mark.parametrize('width', [100, 0])
def test_a_bar_on_a_terminal(epoch_lines, width):
  controller, terminal = pty.openpty()
  if width:  # A new pseudo-terminal says it is 0 columns wide.
    fcntl.ioctl(terminal, termios.TIOCSWINSZ,
                struct.pack('HHHH', 24, width, 0, 0))
  drawn = []

  def drain():  # A terminal's buffer is small: read while the bar draws.
    while True:
      try:
        chunk = os.read(controller, 65536)
      except OSError:  # The terminal side was closed.
        return
      if not chunk:
        return
      drawn.append(chunk)

  reader = threading.Thread(target=drain)
  reader.start()
  try:
    with open(terminal, 'w', closefd=False) as stream:
      _fit(callbacks.EpochProgress(8, bar_stream=stream))
  finally:
    os.close(terminal)
    reader.join(timeout=30)
    os.close(controller)
  text = b''.join(drawn).decode()
  assert 'Epoch 1/2: ' in text and 'Epoch 2/2: ' in text
  # tqdm redraws at most every 0.1s: which step it last drew varies.
  assert re.search(r'Epoch 1/2: +\d+%\|.*\| [0-5]/5 steps \[', text), text
  assert '\r' in text  # Redrawn in place.
  assert len(epoch_lines) == 2  # The log lines too.
