"""Sections of BENCHMARKS.md rendered from constructed figures: the words
and tables of the sections whose runs are too long for a test (their
measuring runs in `python -m benchmarks --section NAME`)."""

from benchmarks import colour_images
from benchmarks import copies
from benchmarks import harness
from benchmarks import photo_folder
from benchmarks import predict_speed
from benchmarks import schedule
from benchmarks import trust
from benchmarks import tuner_trials

CTX = harness.Context('python -m benchmarks CMD', data_dir_shown='DATA')
PLAN = {'architecture': 'small-gap-cnn', 'parameters': 123456, 'epochs': 12,
        'train_records': 3000}


def _rows(text: str, header: str):
  """The rows (cells) of the table whose header row starts with `header`."""
  lines = text.split('\n| ' + header, 1)[1].split('\n')[2:]
  return [[c.strip() for c in line.strip('|').split('|')]
          for line in lines[:lines.index('')]]


def test_predict_speed_shows_each_path_and_the_tflite_files():
  tflite = {'eval_records': 1000, 'saved_model_accuracy': 0.99,
            'models': {'f': {'file': 'model.tflite', 'bytes': 3 << 20,
                             'accuracy': 0.98,
                             'agreement_with_saved_model': 0.995}}}
  text = predict_speed.SECTION.text(dict(
      images=3000, batch=64, repeats=5, loads=((1, 2, 3), (1.5, 2.5, 3.5)),
      seconds=(1.0, 2.0, 5.0), load_s=0.5, agree=0.999, plan=PLAN,
      tflite=tflite), CTX)
  assert [r[1:] for r in _rows(text, 'path')] == [
      ['1.00', '3,000', '1.00x'], ['2.00', '1,500', '0.50x'],
      ['5.00', '600', '0.20x']]
  assert _rows(text, 'model')[1] == ['`model.tflite`', '3.0 MiB', '98.00%',
                                     '99.50%']
  assert 'small-gap-cnn, 123,456 parameters, 12 epoch(s)' in text
  assert 'Same class as `serve_images` for 99.90% of the images.' in text


def test_tuning_marks_the_winner():
  text = tuner_trials.SECTION.text(dict(
      flags=['--tune', '2'], trials=2, steps=200, load=(1.5, 2.5),
      found=[('1', 'lr=0.1', '0.91', '12.0'), ('2', 'lr=0.01', '0.95', '11.0')],
      winner=2, tuner_s=40.0, seconds=90.0), CTX)
  assert _rows(text, 'trial') == [['1', 'lr=0.1', '12.0', '0.91', ''],
                                  ['2', 'lr=0.01', '11.0', '0.95', 'winner']]
  assert 'Tuner: 40 s; whole run up to the Tuner: 90 s.' in text


def test_trust_scores_what_was_found_of_what_was_planted():
  text = trust.SECTION.text(dict(
      planted=(300, 60, 30, 60, 100), size=64,
      flags=('--input-format', 'images'), copies_found_of=(30, 28, 10, 10, 1),
      labels={'train': (30, 25, 40), 'eval': (30, 29, 35)},
      sideways_found=(100, 99), seconds={'DataChecks': 5.0, 'LabelCheck': 10.0},
      whole_run_s=300.0), CTX)
  assert _rows(text, 'copies found') == [[
      '28 of 30 (93%)', '10 of 10 (100%)', '1', '25 of 30 (83%) (40 listed)',
      '29 of 30 (97%) (35 listed)', '99 of 100 (99%)']]
  assert 'DataChecks 5.0, LabelCheck 10.0, whole run 300.0.' in text


def test_schedule_compares_warm_start_with_scratch_per_span():
  def history(span, accuracy, seconds, pushed):
    return {'run': f'r{span}', 'accuracy': str(accuracy),
            'trainer_seconds': str(seconds), 'blessed': 'True',
            'pushed': pushed, 'start': 'scratch'}

  text = schedule.SECTION.text(dict(
      data=(2, 50, 25, 32, 5), flags=schedule.FLAGS,
      training_s={'scratch': {1: 90.0, 2: 90.0}, 'warm': {1: 80.0, 2: 25.0}},
      rows={'scratch': {s: history(s, 0.9, 100.0, 'True') for s in (1, 2)},
            'warm': {1: history(1, 0.9, 100.0, 'True'),
                     2: history(2, 0.896, 30.0, 'False')}},
      after={'scratch': ('1, 2', '10 of 20 right (50.0%)'),
             'warm': ('1 (Model), 2', '12 of 20 right (60.0%)')}), CTX)
  span_1, span_2 = _rows(text, 'span')
  assert span_1[1:5] == ['100 (90)', '90.0%', 'yes/yes', 'scratch']
  assert span_2[5:] == ['30 (25)', '89.6%', 'yes/no', 'scratch',
                        '-0.4 pt, 0.30x time (0.28x in epochs): met']
  assert 'Goal met in 1 of 1 spans.' in text
  assert 'served: the run of span 1); the served model' in text


def test_shapes_and_backbones_show_their_runs():
  text = colour_images.SHAPES.text(dict(
      per_class=300, eval_per_class=60, seconds=600.0, trainer_s=400.0,
      plan=PLAN, epoch_s=[30.0, 31.0, 32.0], val_accuracy=[0.5, 0.8, 0.9],
      tests=1000, test_accuracy=0.93, pushed=True), CTX)
  assert _rows(text, 'whole run') == [[
      '10.0 min', '6.7 min', 'small-gap-cnn', '123,456', '12', '31.0',
      '90.0%', '93.0%', 'yes']]
  assert '3,000 training and 600 eval images' in text
  text = colour_images.BACKBONES.text(dict(
      per_class=50, eval_per_class=10, flags=('--epochs', '3'),
      rows=[harness.row('small-gap-cnn', '--model small-gap-cnn', '1.0',
                        '2.0', '50.0%')],
      loads=['1.0, 1.0, 1.0', '2.0, 2.0, 2.0']), CTX)
  assert _rows(text, 'network') == [[
      'small-gap-cnn', '--model small-gap-cnn', '1.0', '2.0', '50.0%']]
  assert '500 training and 100 eval images' in text


def test_core_shows_goals_and_four_tables_with_their_ratios():
  from benchmarks import core  # pylint: disable=g-import-not-at-top
  figure = lambda *values: harness.Figure(list(values))  # pylint: disable=unnecessary-lambda-assignment
  conversion = core.Conversion(
      examples=70_000, seconds={'reference': figure(7.0), 'ours': figure(0.35)},
      rate={'reference': figure(10_000.0), 'ours': figure(200_000.0)},
      marginal_rate={'reference': 10_000.0, 'ours': None},
      bytes={'reference': 200e6, 'ours': 10e6},
      reference_files={'train': []}, our_examples_uri='')
  rates = {'reference': 20_000.0, 'ours, cold': 160_000.0,
           'bare read': 400_000.0, 'ours, cached': 240_000.0}
  inputs = core.Input(
      batch_size=256, examples=60_000,
      rate={name: figure(r) for name, r in rates.items()},
      cpu_seconds={name: figure(0.5) for name in rates},
      stage_cpu_seconds={'parse': figure(0.1), 'transform': figure(0.1)})
  training = core.Training(batch_size=128, steps=100, rate={
      'ours': figure(2_850.0, 2_800.0, 2_900.0), 'in memory': figure(3_000.0)})
  whole_run = harness.WHOLE_RUN
  dag = core.Dag(
      command=['local_runner.py'], components=['ImageExampleGen', 'resolver',
                                               'Trainer'],
      first={'ImageExampleGen': figure(0.4), 'resolver': figure(0.0),
             'Trainer': figure(34.0), whole_run: figure(50.0)},
      rerun={'ImageExampleGen': figure(0.0), 'resolver': figure(0.0),
             'Trainer': figure(0.0), whole_run: figure(5.0)},
      rerun_cached={'ImageExampleGen': True, 'resolver': True,
                    'Trainer': False}, resolvers=['resolver'])
  text = core.SECTION.text(core.Core(conversion, inputs, training, dag), CTX)
  assert text.startswith('# Benchmarks\n')
  assert _rows(text, 'goal') == [
      ["conversion: ours >= 10x the reference's examples/s",
       '20.0x (steady state, without fixed costs: n/a)', 'met'],
      ["conversion: ours <= 0.3x the reference's bytes", '0.050x', 'met'],
      ['input: ours >= 5x the reference (cold epoch)', '8.0x', 'met'],
      ['input: ours >= 80% of the bare read (cold epoch)', '40%',
       '**not met**'],
      ['training: fed by ours >= 95% of fed from memory', '95%', 'met'],
      ['re-run with nothing changed <= 30 s', '5.0 s', 'met']]
  assert _rows(text, ' | wall time (s)')[2] == [
      'ours / reference', '0.05x', '20.0x', 'n/a', '0.050x']
  assert _rows(text, 'input |')[1] == ['ours, cold', '160,000', '8.0x', '40%',
                                     '0.50']
  assert _rows(text, 'reading') == [['0.500', '0.100', '0.100', '-0.200',
                                     '0.500']]
  assert _rows(text, 'fed by') == [['ours', '2,850 (2,800-2,900)', '95%'],
                                   ['in memory', '3,000', '100%']]
  assert _rows(text, 'component') == [
      ['ImageExampleGen', '0.4', '0.0', 'yes'],
      ['resolver', '0.0', '0.0', 'n/a (a resolver)'],
      ['Trainer', '34.0', '0.0', '**no**'], ['whole run', '50.0', '5.0', '']]
  # Quick mode's re-run stops at the Trainer: what it left out reads '-'.
  dag = core.Dag(
      command=['local_runner.py'], components=['Trainer', 'Evaluator'],
      first={'Trainer': figure(34.0), 'Evaluator': figure(5.0),
             whole_run: figure(50.0)},
      rerun={'Trainer': figure(0.0), whole_run: figure(5.0)},
      rerun_cached={'Trainer': True}, resolvers=[],
      rerun_args=core.QUICK_RERUN)
  text = core.SECTION.text(core.Core(conversion, inputs, training, dag), CTX)
  assert _rows(text, 'component')[:2] == [['Trainer', '34.0', '0.0', 'yes'],
                                          ['Evaluator', '5.0', '-', '-']]
  assert 're-run(s) with nothing changed (`--to-node Trainer`: past' in text
  text = core.SECTION.text(core.Core(conversion, inputs, training, None), CTX)
  assert _rows(text, 'goal')[-1] == [
      're-run with nothing changed <= 30 s',
      'not measured: left out (--skip-dag)', '']
  assert 'Not measured: left out (--skip-dag).' in text


def test_photos_compares_before_with_now_against_the_goals():
  def variant(name, flags, seconds, size, accuracy):
    return dict(name=name, flags=flags, seconds=seconds,
                nodes={'Trainer': seconds / 2, 'LabelCheck': 10.0},
                plan=dict(PLAN, input_size=size), epochs=10, epoch_s=100.0,
                accuracy=accuracy, loads=('1.0, 1.0, 1.0', '2.0, 1.5, 1.0'))
  text = photo_folder.SECTION.text(dict(per_class=360, variants=[
      variant('before', ('--image-size', '168x224'), 600.0, [168, 224], 0.6),
      variant('now', (), 150.0, [72, 96], 0.85)]), CTX)
  [accuracy, speed] = _rows(text, 'goal')
  assert accuracy[1:] == ['85.0%', 'met']
  assert speed[1:] == ['4.0x (150 s against 600 s)', 'met']
  before, now = _rows(text, 'variant')
  assert before[:7] == ['before', '--image-size 168x224', 'small-gap-cnn',
                        '168x224', '10 (12)', '100', '600']
  assert now[:4] == ['now', '(defaults)', 'small-gap-cnn', '72x96']
  assert now[-2:] == ['85.0%', '1.0, 1.0, 1.0; 2.0, 1.5, 1.0']
  assert '1,800 colour JPEGs of 640x480 in 5 class folders' in text


def test_copies_scores_each_kind_against_the_goal():
  found = dict(zip(copies.DIGIT_KINDS, (200, 194, 200, 196, 160, 70)))
  text = copies.SECTION.text(dict(
      digits=dict(per_kind=200, found=found, seconds=8.5, false_pairs=0,
                  other=0, images=70_000, kinds={'exact': 200}),
      photos=dict(per_kind=30, found={'cropped': 0, 'half size': 29},
                  seconds=0.2, false_pairs=1, images=660, kinds={}),
      wallpapers=dict(images=63, found=61, seconds=0.6, within=7, kinds={},
                      false_pairs=[('train/a.png', 'eval/b.png', 'rescaled')]),
      fashion='/usr/share/datasets/fashion-mnist is missing',
      load=(1.0, 2.0)), CTX)
  digit_rows, photo_rows = [_rows(part, 'kind') for part in
                            text.split('**Photos', 1)]
  assert 'Found: 61 of 63 (97%)' in text
  assert "False pairs: 1 (('train/a.png', 'eval/b.png', 'rescaled'))" in text
  assert digit_rows[4] == ['cropped', '160 of 200 (80%)', 'met']
  assert digit_rows[5] == ['shrunk', '70 of 200 (35%)', '**not met**']
  assert photo_rows == [['cropped', '0 of 30 (0%)', '**not met**'],
                        ['half size', '29 of 30 (97%)', 'met']]
  assert "Pairs between two of MNIST's own images: 0." in text
  assert 'fashion-mnist is missing' in text
