"""The layout's promise: imports flow one way, from the record format up to
the runners, and nothing installed depends on the tests or benchmarks.

Read from the source (every `import` and `from ... import`, also the ones
inside functions), not from what happens to be imported at run time.
"""

import ast
import os

import pytest

from tests.local_run import PROJECT_DIR

# Each part of the project, and the parts it may import besides itself.
# Lowest first: the record format knows nothing of the project; components
# and modules know the record format; the DAG knows components and modules;
# the ML Metadata access reads the store the DAG writes; the inspect tool
# reads what the DAG wrote; the runners' shared machinery uses the DAG and
# the inspect tool; the runners and data tools use anything below them. The
# predict tool is a client of the served model: it knows the record format
# and the model's interface (modules), nothing of the DAG.
ALLOWED = {
    'records': set(),
    'components': {'records'},
    'modules': {'records'},
    'pipeline': {'records', 'components', 'modules'},
    'metadata': {'records', 'pipeline'},
    'inspector': {'records', 'modules', 'pipeline', 'metadata'},
    'predict': {'records', 'modules', 'pipeline'},
    'runs': {'records', 'components', 'modules', 'pipeline', 'metadata',
             'inspector'},
    'data': {'records', 'components'},
    'kubeflow': {'records', 'components', 'modules', 'pipeline', 'runs'},
    'local_runner': {'records', 'components', 'modules', 'pipeline',
                     'metadata', 'inspector', 'runs', 'data'},
}
# Not installed (setup.py leaves them out): free to import anything above,
# and imported by nothing above.
UNINSTALLED = {'tests', 'benchmarks'}
PROJECT_PARTS = set(ALLOWED) | UNINSTALLED


def _python_files(part):
  path = os.path.join(PROJECT_DIR, part)
  if os.path.isfile(path + '.py'):
    yield path + '.py'
    return
  for folder, dirs, files in os.walk(path):
    dirs[:] = [d for d in dirs if d != '__pycache__']
    yield from (os.path.join(folder, f) for f in files if f.endswith('.py'))


def _import_statements(path):
  """(module, names imported from it, line) of each absolute import in
  `path`: `import a.b` gives ('a.b', (), line), `from a import b` gives
  ('a', ('b',), line)."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      yield from ((alias.name, (), node.lineno) for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and node.level == 0:
      # Relative imports stay inside their package.
      yield (node.module, tuple(alias.name for alias in node.names),
             node.lineno)


def _project_imports(path):
  """(module name, line) of every import of the project in `path`."""
  for module, _, line in _import_statements(path):
    if module.split('.')[0] in PROJECT_PARTS:
      yield module, line


def _imported_parts(path):
  """{project part: first line} of the project's parts `path` imports."""
  parts = {}
  for name, line in _project_imports(path):
    parts.setdefault(name.split('.')[0], line)
  return parts


def _all_python_files():
  for part in sorted(PROJECT_PARTS):
    yield from _python_files(part)


def test_every_part_of_the_project_is_in_the_layering():
  packages = {entry for entry in os.listdir(PROJECT_DIR)
              if os.path.isfile(os.path.join(PROJECT_DIR, entry,
                                             '__init__.py'))}
  modules = {entry[:-3] for entry in os.listdir(PROJECT_DIR)
             if entry.endswith('.py') and entry != 'setup.py'}
  assert packages | modules == PROJECT_PARTS


@pytest.mark.parametrize('part', sorted(ALLOWED))
def test_imports_flow_downward(part):
  wrong = []
  for path in _python_files(part):
    for imported, line in _imported_parts(path).items():
      if imported != part and imported not in ALLOWED[part]:
        wrong.append(f'{os.path.relpath(path, PROJECT_DIR)}:{line} imports '
                     f'{imported}')
  assert not wrong, (f'{part} may import only {sorted(ALLOWED[part])}:\n' +
                     '\n'.join(wrong))


def test_the_trainers_parts_import_none_of_the_module_files_using_them():
  # modules/training/ holds what the Trainer and the Tuner train with; the
  # module files TFX and LabelCheck name import it, never the other way.
  users = {'modules.trainer', 'modules.tuner', 'modules.local_workers',
           'modules.cross_fit'}
  wrong = [f'{os.path.relpath(path, PROJECT_DIR)}:{line} imports {name}'
           for path in _python_files(os.path.join('modules', 'training'))
           for name, line in _imported_modules(path) if name in users]
  assert not wrong, '\n'.join(wrong)


def _imported_modules(path):
  """(module, line) of each import in `path`; `from a import b` counts as
  both a and a.b, since b may be a module."""
  for module, names, line in _import_statements(path):
    yield module, line
    yield from ((f'{module}.{name}', line) for name in names)


def test_the_module_reader_sees_modules_imported_from_their_package(
    tmp_path):
  path = tmp_path / 'example.py'
  path.write_text('from modules import trainer\n\n'
                  'def f():\n  import modules.tuner\n')
  assert {'modules.trainer', 'modules.tuner'} <= {
      name for name, _ in _imported_modules(str(path))}


def test_every_import_of_the_project_names_a_module_that_exists():
  # After a move, an import left pointing at the old place fails only when
  # its code runs (many are inside functions): find them all here.
  missing = []
  for path in _all_python_files():
    for name, line in _project_imports(path):
      base = os.path.join(PROJECT_DIR, *name.split('.'))
      if not (os.path.isfile(base + '.py') or
              os.path.isfile(os.path.join(base, '__init__.py'))):
        missing.append(f'{os.path.relpath(path, PROJECT_DIR)}:{line} {name}')
  assert not missing, '\n'.join(missing)


def test_the_checker_sees_imports_inside_functions(tmp_path):
  # The layering test is only as good as its reading of the source.
  path = tmp_path / 'example.py'
  path.write_text('import os\nfrom records import features\n\n'
                  'def f():\n  from runs import flags\n'
                  '  import tests.datasets\n  from . import sibling\n')
  assert _imported_parts(str(path)) == {'records': 2, 'runs': 5,
                                        'tests': 6}


# Underscored by TFX, but the way its base classes are meant to be used by
# subclasses: BaseBeamExecutor's pipeline with the component's Beam args.
_TFX_SUBCLASS_HOOKS = {'_make_beam_pipeline'}


def _private_tfx_uses(path):
  """(line, what) of every private TFX name `path` imports or reads.

  A name is private when it starts with one underscore; a TFX name is one
  imported from `tfx`, or an attribute of a name imported from `tfx`.
  """
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  tfx_names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(
        'tfx'):
      for alias in node.names:
        tfx_names.add(alias.asname or alias.name)
        if alias.name.startswith('_') and not alias.name.startswith('__'):
          yield node.lineno, f'from {node.module} import {alias.name}'
    elif isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.split('.')[0] == 'tfx':
          tfx_names.add(alias.asname or alias.name.split('.')[0])
  # `self._x` is TFX's when the file defines no `_x` itself: inherited from
  # a TFX base class.
  own = {n.name for n in ast.walk(tree)
         if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
  targets = [t for n in ast.walk(tree) if isinstance(n, ast.Assign)
             for t in n.targets]
  targets += [n.target for n in ast.walk(tree) if isinstance(n, ast.AnnAssign)]
  targets = [e for t in targets for e in
             (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
  own |= {t.attr for t in targets if isinstance(t, ast.Attribute)}
  own |= {t.id for t in targets if isinstance(t, ast.Name)}
  for node in ast.walk(tree):
    if (isinstance(node, ast.Attribute) and node.attr.startswith('_') and
        not node.attr.startswith('__')):
      base = node.value
      while isinstance(base, ast.Attribute):
        base = base.value
      if not isinstance(base, ast.Name):
        continue
      inherited = (base.id == 'self' and tfx_names and node.attr not in own
                   and node.attr not in _TFX_SUBCLASS_HOOKS)
      if base.id in tfx_names or inherited:
        yield node.lineno, ast.unparse(node)


# TFX's private names would break silently on an upgrade; what TFX has no
# public API for lives in components/tfx_workarounds.py, whose own tests
# check it against the installed TFX.
_WORKAROUNDS = os.path.join('components', 'tfx_workarounds.py')


def test_nothing_installed_uses_private_tfx_names():
  found = []
  for part in sorted(ALLOWED):
    for path in _python_files(part):
      if os.path.relpath(path, PROJECT_DIR) == _WORKAROUNDS:
        continue
      found += [f'{os.path.relpath(path, PROJECT_DIR)}:{line} {what}'
                for line, what in _private_tfx_uses(path)]
  assert not found, '\n'.join(found)


def test_the_private_name_check_sees_imports_and_attributes(tmp_path):
  path = tmp_path / 'example.py'
  path.write_text(
      'from tfx.components.pusher import executor\n'
      'from tfx.orchestration import _private_module\n'
      'from tfx import v1 as tfx\n'
      'import os\n'
      'executor._MarkPushed(1)\n'
      'x = tfx.dsl._Private\n'
      'y = os._exit\n'
      'z = executor.Executor.__init__\n'
      'class Pusher(executor.Executor):\n'
      '  def _own(self):\n'
      '    self._kept = 1\n'
      '    self._typed: int = 1\n'
      '    self._a, self._b = 1, 2\n'
      '  def Do(self):\n'
      '    self._own(); self._kept; self._make_beam_pipeline()\n'
      '    self._typed; self._a; self._b\n'
      '    self._MarkPushed(1)\n')
  assert sorted(line for line, _ in _private_tfx_uses(str(path))) == [
      2, 5, 6, 17]


# The one reader of TFRecord files: it knows their compression and order.
_RECORD_READER = 'records'
_TFRECORD_READS = {'TFRecordDataset', 'tf_record_iterator', 'ReadFromTFRecord'}


def _tfrecord_reads(path):
  """Lines of `path` whose code (not comments or strings) reads TFRecords."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    name = (node.attr if isinstance(node, ast.Attribute) else
            node.id if isinstance(node, ast.Name) else None)
    if name in _TFRECORD_READS:
      yield node.lineno


def test_tfrecord_files_are_read_through_records_only():
  found = [f'{os.path.relpath(path, PROJECT_DIR)}:{line}'
           for part in sorted(ALLOWED) if part != _RECORD_READER
           for path in _python_files(part)
           for line in _tfrecord_reads(path)]
  assert not found, ('read TFRecord files through records/shards.py:\n' +
                     '\n'.join(found))


def test_the_tfrecord_check_sees_code_not_words(tmp_path):
  path = tmp_path / 'example.py'
  path.write_text(
      '"""Reads a TFRecordDataset."""\n'
      'import tensorflow as tf\n'
      '# tf.data.TFRecordDataset in a comment\n'
      'a = tf.data.TFRecordDataset(["f"])\n'
      'from apache_beam.io import ReadFromTFRecord\n'
      'b = ReadFromTFRecord\n')
  assert sorted(_tfrecord_reads(str(path))) == [4, 6]


# The split names' one home; the dataset tools in data/ write input folders
# by their conventional names, as a person would.
_SPLITS_HOME = os.path.join('records', 'features.py')
_NOT_SPLITS = {
    # Keras' TensorBoard log folders, not splits.
    (os.path.join('inspector', 'trainer_run.py'), 'train'),
    (os.path.join('inspector', 'trainer_run.py'), 'validation')}


def _split_names_spelled(path):
  """(line, name) of each string in `path` that is a split's name."""
  from records import features  # pylint: disable=g-import-not-at-top
  names = {features.TRAIN_SPLIT, features.VALIDATION_SPLIT, features.EVAL_SPLIT,
           features.EARLIER_EVAL_SPLIT}
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  for node in ast.walk(tree):
    if isinstance(node, ast.Constant) and node.value in names:
      yield node.lineno, node.value


def test_split_names_are_spelled_in_records_features_only():
  found = []
  for part in sorted(ALLOWED):
    if part == 'data':
      continue
    for path in _python_files(part):
      where = os.path.relpath(path, PROJECT_DIR)
      found += [f'{where}:{line} {name!r}'
                for line, name in _split_names_spelled(path)
                if where != _SPLITS_HOME and (where, name) not in _NOT_SPLITS]
  assert not found, ('take split names from records/features.py:\n' +
                     '\n'.join(found))


def test_the_split_names_check_sees_strings_not_words(tmp_path):
  path = tmp_path / 'example.py'
  path.write_text('"""The train split."""\n'
                  '# eval in a comment\n'
                  "a = {'train': 1}\n"
                  "b = 'eval'\n"
                  "c = 'trained'\n")
  assert sorted(_split_names_spelled(str(path))) == [(3, 'train'),
                                                    (4, 'eval')]
