"""The photos section: a folder of 640x480 JPEGs (data/photos.py) through
the whole DAG, with the network and size of before (given by flags) and the
defaults of now. Its template says how.
"""

from typing import Any, Dict, List

from benchmarks import harness
from data import photos
from inspector import evaluation

PER_CLASS, QUICK_PER_CLASS = 360, 6
RUNNER_FLAGS = ('--input-format', 'images')
QUICK_FLAGS = ('--epochs', '1', '--train-steps', '2', harness.ONE_PROCESS)
# Before: the size ImageExampleGen chooses for 640x480 (at most 224 a side)
# trained as it is, by the network auto chose.
VARIANTS = (('before', ('--image-size', '168x224', '--model', 'small-gap-cnn')),
            ('now', ()))
# Goals: now's eval accuracy, and its whole run against before's.
ACCURACY_GOAL = 0.8
SPEED_GOAL = 3.0
COMPONENTS = ('ImageExampleGen', 'DataChecks', 'StatisticsGen', 'Transform',
              'Trainer', 'Evaluator', 'LabelCheck')


def eval_accuracy(output_dir: str) -> float:
  """The candidate's accuracy on the eval split, from the run's Evaluator."""
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  metrics = harness.newest_artifact(output_dir, 'Evaluator', 'evaluation')
  for record in tfma.load_metrics(metrics):
    if record.slice_key.single_slice_keys:
      continue  # The overall slice only.
    for item in record.metric_keys_and_values:
      key = item.key
      if (key.name == evaluation.ACCURACY_METRIC_NAME and not key.is_diff
          and key.model_name != 'baseline'):
        return float(item.value.double_value.value)
  raise SystemExit(f'error: no accuracy in {metrics}')


def measure(ctx: harness.Context) -> Dict[str, Any]:
  """Both variants, one whole run each, one after the other."""
  per_class = ctx.pick(PER_CLASS, QUICK_PER_CLASS)
  data_dir = ctx.path('photos')
  photos.write(data_dir, per_class)
  variants: List[Dict[str, Any]] = []
  for name, flags in VARIANTS:
    print(f'  photos: {name} {" ".join(flags)}', flush=True)
    load_start = harness.loads()
    run, output_dir = ctx.run(f'photos-{name}', *RUNNER_FLAGS, *flags,
                              *ctx.pick((), QUICK_FLAGS), data_dir=data_dir)
    _, plan = harness.trainer_model(output_dir)
    epoch_s, _ = run.epochs()
    variants.append(dict(
        name=name, flags=flags, seconds=run.seconds,
        nodes={c: run.nodes[c][0] for c in COMPONENTS if c in run.nodes},
        plan=plan, epochs=len(epoch_s), epoch_s=sum(epoch_s),
        accuracy=eval_accuracy(output_dir),
        loads=(load_start, harness.loads())))
  return dict(per_class=per_class, variants=variants)


def render(r: Dict[str, Any], ctx: harness.Context) -> Dict[str, Any]:
  """What templates/photos.md.j2 reads: goals and both runs."""
  for v in r['variants']:
    v['cells'] = (
        v['name'], ' '.join(v['flags']) or '(defaults)',
        v['plan']['architecture'], '%dx%d' % tuple(v['plan']['input_size']),
        f'{v["epochs"]} ({v["plan"]["epochs"]})', f'{v["epoch_s"]:.0f}',
        f'{v["seconds"]:.0f}',
        *(f'{v["nodes"].get(c, 0):.1f}' for c in COMPONENTS),
        f'{v["accuracy"]:.1%}', '; '.join(v['loads']))
  before, now = r['variants']
  speed = before['seconds'] / now['seconds']
  return dict(
      r, before=before, now=now, speed=speed, speed_goal=SPEED_GOAL,
      accuracy_goal=ACCURACY_GOAL, classes=len(photos.CLASSES),
      size=f'{photos.WIDTH}x{photos.HEIGHT}', components=COMPONENTS,
      flags=(*RUNNER_FLAGS, *ctx.pick((), QUICK_FLAGS)),
      cpu=harness.cpu_line('none of them'))


SECTION = harness.Section(
    heading=f'## Photos: {photos.WIDTH}x{photos.HEIGHT} JPEGs in class '
    'folders, the whole DAG, before and now',
    measure=measure, render=render, template='photos.md.j2')
