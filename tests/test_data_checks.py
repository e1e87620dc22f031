"""DataChecks finds planted copies across splits (exact, re-encoded as
JPEG, brightened, with mild noise), does not pair distinct look-alike
images of one class, and lists image issues; the ValidationGate stops on
eval copies above the share unless told to keep them; the inspector's
duplicates command writes the pairs as CSV."""

import csv
import io
import json
import os
import re

import apache_beam as beam
import numpy as np
from PIL import Image, ImageDraw
import pytest
import tensorflow as tf
from tfx.dsl.components.base import base_beam_executor
from tfx.types import artifact_utils
from tfx.types import standard_artifacts

from components.data_checks import executor as data_checks_executor
from components.data_checks import image_signatures
from components.data_checks import issues
from components.data_checks import matching
from components.data_checks import shard_signatures
from components.data_checks.component import DataCheckResults
from components.image_example_gen import idx
from components.image_example_gen.options import ImageExampleGenOptions
from inspector import duplicates
from inspector import images
from inspector import report
from metadata import queries
from metadata import store
from pipeline import constants
from records import data_check_results as results
from records import features
from records import shards
from tests import artifacts
from tests import kubeflow_specs
from tests import local_run
from tests import tiny_runs

PLANTED = ('exact', 'jpeg', 'brightened', 'noise')


def strokes(count: int, seed: int) -> np.ndarray:
  """[count, 28, 28] uint8 look-alikes, MNIST's plain "1"s: one white
  stroke each, anti-aliased, its ends, slant and width a little different."""
  rng = np.random.default_rng(seed)
  images = []
  for _ in range(count):
    canvas = Image.new('L', (112, 112))
    top = rng.uniform(36, 76), rng.uniform(12, 24)
    bottom = top[0] + rng.uniform(-24, 24), rng.uniform(88, 100)
    ImageDraw.Draw(canvas).line([top, bottom], fill=255,
                                width=int(rng.integers(8, 14)))
    images.append(np.asarray(canvas.resize((28, 28), Image.BOX)))
  return np.stack(images)


def planted_copy(image: np.ndarray, kind: str, rng) -> np.ndarray:
  if kind == 'exact':
    return image.copy()
  if kind == 'jpeg':
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, 'JPEG', quality=75)
    return np.asarray(Image.open(buffer))
  if kind == 'brightened':
    return np.clip(image * 1.1 + 25, 0, 255).astype(np.uint8)
  return np.clip(image + rng.normal(0, 6, image.shape), 0, 255).astype(
      np.uint8)


def write_planted_idx(directory, train: int = 300, evaluation: int = 100,
                      copies_per_kind: int = 5):
  """MNIST-layout look-alikes; eval's first images are copies of train
  images 0, 1, 2, ... one kind after another. Returns the train indices
  copied, per kind."""
  rng = np.random.default_rng(7)
  train_images = strokes(train, seed=1)
  eval_images = strokes(evaluation, seed=2)
  copied = {}
  for k, kind in enumerate(PLANTED):
    for c in range(copies_per_kind):
      source = k * copies_per_kind + c
      eval_images[source] = planted_copy(train_images[source], kind, rng)
      copied.setdefault(kind, []).append(source)
  os.makedirs(directory, exist_ok=True)
  for prefix, images in (('train', train_images), ('t10k', eval_images)):
    idx.write(os.path.join(directory, f'{prefix}-images-idx3-ubyte.gz'),
              images)
    idx.write(os.path.join(directory, f'{prefix}-labels-idx1-ubyte.gz'),
              np.ones(len(images), np.uint8))
  return copied


def run_data_checks(examples, output_uri, drop: bool = False):
  """The DataChecks executor on `examples`, in-memory Beam; returns its
  DataCheckResults, or with `drop` (as DataChecksDroppingCopies runs it)
  that and its Examples without the copies."""
  output = DataCheckResults()
  output.uri = os.path.join(str(output_uri), 'data_checks')
  without_copies = standard_artifacts.Examples()
  without_copies.uri = os.path.join(str(output_uri), 'examples')
  outputs = {results.OUTPUT_KEY: [output]}
  if drop:
    outputs[data_checks_executor.WITHOUT_COPIES_KEY] = [without_copies]
  for artifact in (output, without_copies):
    os.makedirs(artifact.uri, exist_ok=True)
  executor = data_checks_executor.Executor(
      base_beam_executor.BaseBeamExecutor.Context(
          beam_pipeline_args=[*artifacts.IN_MEMORY,
                              *constants.LOCAL_BEAM_PIPELINE_ARGS]))
  with artifacts._program_argv():  # pylint: disable=protected-access
    executor.Do({data_checks_executor.EXAMPLES_KEY: [examples]}, outputs, {})
  return (output, without_copies) if drop else output


@pytest.fixture(scope='module')
def checked(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('data_checks')
  copied = write_planted_idx(tmp / 'data')
  examples = artifacts.run_example_gen(
      tmp / 'data', tmp / 'examples',
      ImageExampleGenOptions(input_format='idx', num_shards=3))
  output, without_copies = run_data_checks(examples, tmp / 'checks',
                                           drop=True)
  return copied, output, without_copies, examples


def test_planted_copies_across_splits_are_found(checked):
  copied, output, _, _ = checked
  rows = list(results.read_pairs(output.uri))
  across = [row for row in rows if row['split_a'] != row['split_b']]
  # Each pair names its two images by their source: IDX file and index.
  assert {(row['source_a'], row['source_b']) for row in across} == {
      (f'train-images-idx3-ubyte.gz:{index}',
       f't10k-images-idx3-ubyte.gz:{index}')
      for indices in copied.values() for index in indices}
  assert all(row['record_a'].startswith('data_tfrecord-') for row in across)
  found = {(row['split_a'], row['split_b'], row['kind']) for row in across}
  assert found <= {('train', 'eval', 'exact'), ('train', 'eval', 'near')}
  kinds = [row['kind'] for row in across]
  assert kinds.count('exact') == len(copied['exact'])
  # Every planted copy, and nothing else: 20 pairs, 20 eval images.
  assert len(across) == sum(len(v) for v in copied.values())
  assert len({row['record_b'] for row in across}) == len(across)
  held_out = results.json_property(output, results.HELD_OUT_PROPERTY)
  assert held_out == {'eval': {'images': 20, 'share': 0.2}}
  assert results.json_property(output, results.COPIES_PROPERTY) == {
      'train-train': 0, 'train-eval': 20, 'eval-eval': 0}
  assert output.get_int_custom_property('copies_train_eval') == 20


def test_distinct_look_alikes_are_not_paired(checked):
  _, output, _, _ = checked
  rows = list(results.read_pairs(output.uri))
  # 300 train and 80 eval strokes of one class, none a copy of another.
  assert [row for row in rows if row['split_a'] == row['split_b']] == []
  assert results.json_property(output, results.IMAGES_PROPERTY) == {
      'train': 300, 'eval': 100}
  # The signatures the Beam workers wrote there are gone.
  assert sorted(os.listdir(output.uri)) == [results.COPIES_FILE,
                                            results.ISSUES_FILE]


def test_copies_among_thousands_of_look_alikes_are_found():
  # Plain "1"s share hash bands by the thousand: a copy must still come
  # near its original in the band's order.
  originals = strokes(8000, seed=3)
  rng = np.random.default_rng(0)
  copies = np.stack([planted_copy(image, 'jpeg', rng)
                     for image in originals[:50]])
  found = image_signatures.compute(
      np.concatenate([originals, copies])[..., None])
  pairs = matching.find_copies(found.digest, found.phash, found.order_key,
                               found.thumbnail, np.ones(8050, bool))
  paired = set(zip(pairs.first.tolist(), pairs.second.tolist()))
  assert sum((number, 8000 + number) in paired for number in range(50)) >= 48


def test_candidates_read_in_runs_are_those_of_the_whole_order(monkeypatch):
  # A pair whose two images fall in two runs of a band's order must still
  # come: each run reaches a window past its end.
  rng = np.random.default_rng(0)
  hashes = rng.integers(0, 2**63, 500, dtype=np.uint64)
  # Every image has a near twin, which shares one band only: a pair
  # lost at a run's end is not found in another band's order.
  hashes[250:] = hashes[:250] ^ np.uint64(1 | 1 << 16 | 1 << 32)
  keys = rng.standard_normal((500, image_signatures.BANDS)).astype(np.float16)
  usable = np.ones(500, bool)

  def pairs():
    return {tuple(sorted((int(images[a]), int(images[b]))))
            for images, first, second in matching.candidates(hashes, keys,
                                                             usable)
            for a, b in zip(first, second)}

  whole = pairs()
  monkeypatch.setattr(matching, '_RUN', 7)
  assert {(n, n + 250) for n in range(250)} <= whole
  assert pairs() == whole


def test_compare_is_exact_below_its_bound_and_no_less_above():
  rng = np.random.default_rng(0)
  thumbs = rng.integers(-127, 128, (300, 256)).astype(np.int8)
  spread = np.repeat([8, 40], 75)[:, None]  # Half the pairs near.
  thumbs[1::2] = np.clip(
      thumbs[::2] + rng.integers(-spread, spread + 1, (150, 256)), -127, 127)
  first, second = np.arange(0, 300, 2), np.arange(1, 300, 2)
  exact = np.abs(thumbs[first].astype(int) - thumbs[second]).max(axis=1) / (
      image_signatures.THUMB_SCALE)
  assert np.array_equal(matching.compare(thumbs, first, second), exact)
  bounded = matching.compare(thumbs, first, second, at_most=1.5)
  below = exact < 1.5
  assert below.any() and not below.all()
  assert np.array_equal(bounded[below], exact[below])
  assert (bounded[~below] >= 1.5).all()


def test_work_on_cores_comes_in_order_with_few_items_read_ahead():
  # A large input's band orders hold many runs: only as many as there are
  # threads may be held at once.
  threads = len(os.sched_getaffinity(0))
  read = []

  def items():
    for item in range(50):
      read.append(item)
      yield item

  for number, result in enumerate(matching.on_cores(lambda x: x * x,
                                                    items())):
    assert result == number * number
    assert len(read) <= number + threads
  assert len(read) == 50


@pytest.fixture(scope='module')
def gated_runs(tmp_path_factory):
  """The data half of the pipeline on planted data (a fifth of eval copied
  from train): once as is, once with --eval-copies keep."""
  tmp = tmp_path_factory.mktemp('gated')
  write_planted_idx(tmp / 'data')
  runs = {}
  for name, flags in (('stop', []), ('keep', ['--eval-copies', 'keep'])):
    runs[name] = local_run.run(
        '--data-dir', str(tmp / 'data'), '--output-dir', str(tmp / 'out'),
        '--to-node', 'ValidationGate', '--num-shards', '2',
        # Every planted copy's image stays in train.
        '--validation-percent', '0', local_run.ONE_PROCESS, *flags)
  return tmp / 'out', runs


def test_gate_stops_on_eval_copies_above_the_share(gated_runs):
  _, runs = gated_runs
  stopped = runs['stop']
  assert stopped.returncode == 1, stopped.stdout[-3000:]
  lines = [line for line in (stopped.stdout + stopped.stderr).splitlines()
           if 'with a copy in train' in line and 'ValidationGate' in line]
  assert len(lines) == 1, stopped.stdout[-3000:] + stopped.stderr[-3000:]
  assert 'eval: 20 images (20.00%) with a copy in train' in lines[0]
  # The first pairs, named by their sources: a planted copy and its image.
  assert re.search(r't10k-images-idx3-ubyte\.gz:(\d+) in eval is a copy of '
                   r'train-images-idx3-ubyte\.gz:\1 in train \(', lines[0])
  assert '--eval-copies keep' in lines[0]


def test_the_report_says_the_copies_kept_the_trainer_from_running(
    gated_runs):
  out, _ = gated_runs
  md = queries.Metadata(store.open_store(str(out / 'metadata.db')), 'test')
  stopped = md.run('-2')  # The first of the two runs.
  for section in (report.training_section(md, stopped),
                  report.evaluation_section(md, stopped)):
    assert section['status'] == 'not_run'
    assert ('did not run: the ValidationGate stopped the run: eval: 20 '
            'images (20.00%) with a copy in train') in section['reason']
    assert 'ExampleValidator' not in section['reason']


def test_eval_copies_keep_goes_on_and_says_what_it_found(gated_runs):
  _, runs = gated_runs
  kept = runs['keep']
  assert kept.returncode == 0, kept.stderr[-3000:]
  assert '▶ ValidationGate' in kept.stdout


def test_duplicates_command_writes_every_pair_as_csv(gated_runs, tmp_path):
  out, _ = gated_runs
  result = tiny_runs.inspect_json(out, 'duplicates', '--csv',
                                  str(tmp_path / 'pairs.csv'))
  assert result['copies']['train-eval'] == 20
  assert result['held_out_copies']['eval']['images'] == 20
  with open(tmp_path / 'pairs.csv', newline='') as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == result['csv']['pairs'] == 20
  assert {row['split_a'] + '-' + row['split_b'] for row in rows} == {
      'train-eval'}
  assert all(row['source_a'].startswith('train-images-idx3-ubyte.gz:')
             for row in rows)
  text = tiny_runs.inspect(out, 'duplicates').stdout
  assert 'eval: 20 images (20.00%) with a copy in train' in text
  assert 't10k-images-idx3-ubyte.gz:' in text


def test_dropping_leaves_eval_without_its_copies_of_train(checked):
  copied, output, without_copies, _ = checked
  assert artifact_utils.decode_split_names(
      without_copies.split_names) == ['eval']
  copies = {row['source_b'] for row in results.read_pairs(output.uri)}
  kept = [source for source, _ in shards.read_sources(os.path.join(
      without_copies.uri, 'Split-eval'))]
  assert len(kept) == 100 - sum(len(v) for v in copied.values())
  assert len(copies) == 20 and not copies & set(kept)
  # What the Trainer's and Evaluator's readers look for is carried over,
  # and nothing that describes ImageExampleGen's records.
  assert without_copies.get_int_custom_property('image_height') == 28
  assert set(without_copies.mlmd_artifact.custom_properties) <= (
      data_checks_executor.CARRIED_PROPERTIES)


def test_the_label_counts_are_those_of_every_record_of_each_split(checked):
  # The report's class balance reads them instead of every label.
  _, output, _, examples = checked
  recorded = json.loads(output.get_string_custom_property(
      results.LABELS_PROPERTY))
  read = {}
  for split in artifact_utils.decode_split_names(examples.split_names):
    labels = [label for _, label in shards.read_sources(
        artifact_utils.get_split_uri([examples], split))]
    read[split] = {str(label): count for label, count in
                   zip(*np.unique(labels, return_counts=True))}
  assert recorded == read and set(read) == {'train', 'eval'}


def test_the_lists_escape_names_a_spreadsheet_would_run(tmp_path):
  # Class folders and files named as formulas: copies.csv and
  # image_issues.csv mark them as text; the project reads the names back.
  from tests.test_review_lists import formula_cells  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(3)
  classes = ('=HYPERLINK("http:evil","x")', '+cmd')
  copied = rng.integers(0, 255, (28, 28), dtype=np.uint8)
  for name in classes:
    os.makedirs(tmp_path / 'data' / name)
    for i in range(6):
      Image.fromarray(rng.integers(0, 255, (28, 28), dtype=np.uint8)).save(
          tmp_path / 'data' / name / f'-{i}.png')
    Image.fromarray(copied).save(tmp_path / 'data' / name / '=copy.png')
  Image.fromarray(np.full((28, 28), 120, np.uint8)).save(
      tmp_path / 'data' / classes[1] / '@blank.png')
  examples = artifacts.run_example_gen(
      tmp_path / 'data', tmp_path / 'examples',
      ImageExampleGenOptions(input_format='images', num_shards=1,
                             eval_percent=30))
  output = run_data_checks(examples, tmp_path / 'checks')
  for name in (results.COPIES_FILE, results.ISSUES_FILE):
    assert formula_cells(os.path.join(output.uri, name)) == [], name
  [pair] = results.read_pairs(output.uri)
  assert {pair['source_a'], pair['source_b']} == {
      f'{name}/=copy.png' for name in classes}
  assert (pair['kind'], float(pair['correlation'])) == ('exact', 1.0)
  issues = list(results.read_issues(output.uri))
  assert (f'{classes[1]}/@blank.png', 'near_blank') in {
      (row['source'], row['issue']) for row in issues}
  # `inspector duplicates` (its JSON and its --csv) reads the same.
  artifact = queries.Artifact(id=1, type='DataCheckResults', uri=output.uri,
                              state='LIVE', created_ms=0, properties={})
  assert list(duplicates.pair_rows(artifact)) == [pair]


def test_the_pairs_images_are_the_records_the_pairs_name(checked):
  # The report draws each pair from its records' places, 'shard:index'; the
  # images there are those of the records' sources, in either split.
  _, output, _, examples = checked
  artifact = queries.Artifact(
      id=1, type='Examples', uri=examples.uri, state='LIVE', created_ms=0,
      properties={'split_names': examples.split_names})
  rows = list(results.read_pairs(output.uri))
  splits_read = set()
  for side in ('a', 'b'):
    for split in {row[f'split_{side}'] for row in rows}:
      named = [row for row in rows if row[f'split_{side}'] == split]
      by_place = images.records_in(artifact, {split: [
          row[f'record_{side}'] for row in named]})[split]
      by_source = images.records_with_sources(
          artifact, split, [row[f'source_{side}'] for row in named])
      for row in named:
        np.testing.assert_array_equal(by_place[row[f'record_{side}']],
                                      by_source[row[f'source_{side}']])
        splits_read.add(split)
  assert splits_read == {'train', 'eval'}
  canvas, _ = duplicates.pairs_picture(artifact, rows[:4], 'pairs')
  assert canvas.width > 2 * 56 and canvas.height > 4 * 56


def test_image_issues_name_blank_dark_bright_and_blurry_images():
  images = strokes(40, seed=3).astype(np.float64)
  blank = np.full((28, 28), 120.0)
  dark = images[0] * 0.2  # Strokes at most 51 of 255.
  bright = 200 + images[1] * 0.2
  # Each pixel the mean of its 5x5 neighbourhood: a stroke without edges.
  padded = np.pad(images[2], 2, mode='edge')
  blurred = sum(padded[i:i + 28, j:j + 28] for i in range(5)
                for j in range(5)) / 25
  planted = np.stack([blank, dark, bright, blurred])
  batch = np.concatenate([planted, images[4:]]).astype(np.uint8)[..., None]
  scores = image_signatures.compute(batch).scores
  flags = issues.flags(scores, float(np.median(scores['sharpness'])))
  assert {issue: np.flatnonzero(found).tolist()
          for issue, found in flags.items()} == {
              'near_blank': [0], 'dark': [1], 'bright': [2], 'blurry': [3]}


def test_eval_copies_drop_has_the_evaluator_read_eval_without_them(tmp_path):
  spec = kubeflow_specs.compile_spec(
      tmp_path / 'pipeline.yaml', *kubeflow_specs.CLUSTER_PATHS,
      '--eval-copies', 'drop')
  examples = spec['root']['dag']['tasks']['Evaluator']['inputs'][
      'artifacts']['examples']['taskOutputArtifact']
  assert examples == {'outputArtifactKey': 'examples_without_copies',
                      'producerTask': 'DataChecks'}


def test_a_group_of_shards_gives_each_its_signatures_and_names_a_bad_one(
    tmp_path):
  # Small shards are read as one group (one tf.data reader); each still gets
  # its own signatures, an empty one too, and a damaged one is named.
  geometry = features.ImageGeometry(height=4, width=4, channels=1)
  paths = []
  for number, size in enumerate((3, 0, 2)):
    paths.append(str(tmp_path / f'shard-{number}.gz'))
    with tf.io.TFRecordWriter(paths[-1], 'GZIP') as writer:
      for index in range(size):
        writer.write(features.make_example(
            bytes([index * 40 + number]) * 16, geometry, index,
            source=f'img-{number}-{index}'))
  [group] = shard_signatures.groups(paths)
  assert group == list(enumerate(paths))
  work = tmp_path / 'work'
  work.mkdir()
  shard_signatures.write_shards(group, str(work), geometry, 'raw')
  assert [shard_signatures.read_small(str(work), n, ['label'])[
      'label'].tolist() for n in range(3)] == [[0, 1, 2], [], [0, 1]]
  assert shard_signatures.read_sources(str(work), 2).tolist() == [
      b'img-2-0', b'img-2-1']

  # The second shard: the first one's records, cut in the middle.
  records = (tmp_path / 'shard-0.gz').read_bytes()
  (tmp_path / 'shard-1.gz').write_bytes(records[:len(records) // 2])
  with pytest.raises(ValueError, match=re.escape(paths[1]) +
                     ': cannot read its records as images'):
    shard_signatures.write_shards(group, str(work), geometry, 'raw')


@pytest.mark.parametrize('args, workers', [
    ([], 1),
    (['--direct_running_mode=in_memory', '--direct_num_workers=1'], 1),
    (['--direct_running_mode=multi_processing', '--direct_num_workers=3'], 3),
    (['--direct_running_mode=multi_processing', '--direct_num_workers=0'],
     os.cpu_count()),
    (list(constants.BEAM_PIPELINE_ARGS), os.cpu_count()),
    (['--runner=PortableRunner', '--job_endpoint=localhost:1'],
     os.cpu_count()),
])
def test_small_shards_are_grouped_for_the_workers_beam_runs(
    args, workers, tmp_path):
  # One group per worker Beam runs the signatures on: in memory, one group,
  # so one reader and one trace; a runner it cannot count, one per core.
  options = beam.Pipeline(argv=args).options
  assert data_checks_executor.beam_workers(options) == workers
  paths = []
  for number in range(8):
    paths.append(str(tmp_path / f'shard-{number}.gz'))
    with open(paths[-1], 'wb') as f:
      f.write(bytes(1000))
  assert len(shard_signatures.groups(paths, workers)) == min(8, workers)
