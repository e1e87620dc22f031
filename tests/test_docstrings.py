"""Every public function and class of the library's folders has a docstring.

Read from the source with ast, so nothing is imported. Public means a name
without a leading underscore, at module level, or a method (dunders aside)
or nested class of a public class. Keras and TFX hooks (`call`, `Do`,
`run_fn`...) count like any other.
"""

import ast
import os
from typing import Iterator, List, Tuple

import pytest

from tests.local_run import PROJECT_DIR

FOLDERS = ['components', 'metadata', 'modules', 'pipeline', 'predict',
           'records']
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Statements whose bodies still define module-level names.
_BLOCKS = (ast.If, ast.Try, ast.With)


def _python_files() -> Iterator[str]:
  for folder in FOLDERS:
    for parent, dirs, files in os.walk(os.path.join(PROJECT_DIR, folder)):
      dirs[:] = sorted(d for d in dirs if d != '__pycache__')
      for name in sorted(files):
        if name.endswith('.py'):
          yield os.path.join(parent, name)


def _is_public(name: str) -> bool:
  return not name.startswith('_')


def _is_accessor(node: ast.AST) -> bool:
  """Whether `node` is a property's setter or deleter.

  The property's getter documents it.
  """
  return any(
      isinstance(d, ast.Attribute) and d.attr in ('setter', 'deleter')
      for d in getattr(node, 'decorator_list', []))


def _statements(body: List[ast.stmt]) -> Iterator[ast.stmt]:
  """The statements of `body`, with those inside if/try/with blocks."""
  for node in body:
    if isinstance(node, _BLOCKS):
      for field in ('body', 'orelse', 'finalbody'):
        yield from _statements(getattr(node, field, []))
      for handler in getattr(node, 'handlers', []):
        yield from _statements(handler.body)
    else:
      yield node


def _public_definitions(body: List[ast.stmt], prefix: str = ''
                        ) -> Iterator[Tuple[str, ast.AST]]:
  """(qualified name, node) of each public definition in `body`."""
  for node in _statements(body):
    if not isinstance(node, _DEFINITIONS) or not _is_public(node.name):
      continue
    if _is_accessor(node):
      continue
    yield prefix + node.name, node
    if isinstance(node, ast.ClassDef):
      yield from _public_definitions(node.body, prefix + node.name + '.')


def missing_docstrings(path: str) -> List[str]:
  """'file:line:name' of each public definition of `path` without docstring."""
  with open(path) as f:
    tree = ast.parse(f.read(), path)
  where = os.path.relpath(path, PROJECT_DIR)
  return [f'{where}:{node.lineno}:{name}'
          for name, node in _public_definitions(tree.body)
          if not ast.get_docstring(node)]


def test_every_folder_is_read():
  folders = {os.path.relpath(path, PROJECT_DIR).split(os.sep)[0]
             for path in _python_files()}
  assert folders == set(FOLDERS)


def test_every_public_function_and_class_has_a_docstring():
  missing = [line for path in _python_files()
             for line in missing_docstrings(path)]
  if missing:
    pytest.fail(f'{len(missing)} public names without a docstring:\n' +
                '\n'.join(missing), pytrace=False)
