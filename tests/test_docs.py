"""The docs' commands must exist: every flag, `make` target, console script
and `python -m` module that a shell block of README.md or docs/*.md names.

Read from the docs' fenced ```sh, ```bash, ```shell and ```console blocks (in
a console block only the `$ ` lines are commands; the rest is output), and
checked against the programs themselves, not a list kept here: flags and
subcommands from each command's `--help` (run once per command, in a
subprocess), targets and what ARGS feeds from `make -n`, console scripts
from setup.py, modules from importlib.
"""

import ast
import dataclasses
import glob
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest

from tests.local_run import PROJECT_DIR

DOCS = ['README.md'] + sorted(
    os.path.relpath(path, PROJECT_DIR)
    for path in glob.glob(os.path.join(PROJECT_DIR, 'docs', '*.md')))
SHELL_LANGUAGES = {'sh', 'bash', 'shell', 'console'}
_FENCE = re.compile(r'^\s*(```+|~~~+)\s*([\w+-]*)')
_OPERATORS = set(';&|')
_ENV_ASSIGNMENT = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*=')
_PYTHON = re.compile(r'^python(\d+(\.\d+)?)?$')
# Words that run the command after them.
_PREFIXES = {'sudo', 'env', 'time', 'nohup', 'exec'}
# Make variables that hold another program's flags: pytest's are its own.
_UNCHECKED_MAKE_VARIABLES = {'PYTEST_ARGS'}
_ARGS_MARKER = '__DOCS_ARGS__'


@dataclasses.dataclass(frozen=True)
class Command:
  where: str  # file:line
  argv: Tuple[str, ...]


def _strip_comment(line: str) -> str:
  """The line without a shell comment: '#' starting a word, outside quotes."""
  quote = None
  for i, char in enumerate(line):
    if quote:
      if char == quote:
        quote = None
    elif char in '\'"':
      quote = char
    elif char == '#' and (i == 0 or line[i - 1].isspace()):
      return line[:i]
  return line


def _split_simple_commands(line: str) -> Iterator[List[str]]:
  lexer = shlex.shlex(line, posix=True, punctuation_chars=';&|')
  lexer.whitespace_split = True
  lexer.commenters = ''
  words: List[str] = []
  for token in lexer:
    if set(token) <= _OPERATORS:
      if words:
        yield words
      words = []
    else:
      words.append(token)
  if words:
    yield words


def commands(text: str, name: str) -> Iterator[Command]:
  """The commands of `text`'s shell blocks, one per simple command."""
  lines = text.splitlines()
  language = None  # Inside a shell block: its language; else None.
  in_block = False
  pending, start = '', 0
  for number, line in enumerate(lines, 1):
    fence = _FENCE.match(line)
    if fence:
      in_block = not in_block
      language = fence.group(2).lower() if in_block else None
      pending = ''
      continue
    if language not in SHELL_LANGUAGES:
      continue
    if not pending:
      stripped = line.strip()
      if stripped.startswith('$ ') or stripped == '$':
        stripped = stripped[1:]
      elif language == 'console':
        continue  # Output.
      line, start = stripped, number
    line = _strip_comment(line)
    if line.rstrip().endswith('\\'):
      pending += line.rstrip()[:-1] + ' '
      continue
    full, pending = pending + line, ''
    try:
      simple_commands = list(_split_simple_commands(full))
    except ValueError as e:  # Unbalanced quotes.
      yield Command(f'{name}:{start}', ('<unparsable>', full, str(e)))
      continue
    for words in simple_commands:
      yield Command(f'{name}:{start}', tuple(words))


@dataclasses.dataclass
class Help:
  """What one command's --help says it takes."""
  flags: Dict[str, bool]  # Flag: whether it takes a value.
  subcommands: List[str]
  error: str = ''


def _parse_help(text: str) -> Help:
  flags, subcommands = {'-h': False, '--help': False}, []
  section = ''
  for line in text.splitlines():
    if line and not line[0].isspace():
      section = line.strip().rstrip(':').lower()
      continue
    indent = len(line) - len(line.lstrip())
    stripped = line.strip()
    if stripped.startswith('-') and indent < 8:
      # argparse's option line: '--flag METAVAR, -f METAVAR  description'.
      invocation = re.split(r'\s{2,}', stripped)[0]
      for part in invocation.split(', '):
        words = part.split()
        if words and words[0].startswith('-'):
          flags[words[0].split('=')[0]] = len(words) > 1 or '=' in words[0]
    elif section == 'positional arguments' and indent == 4 and stripped:
      subcommands.append(stripped.split()[0])  # A subparser's choice.
  return Help(flags, subcommands)


def _is_flag(word: str) -> bool:
  return (word.startswith('-') and word != '-'
          and not re.match(r'^-\d', word)  # A negative number: a value.
          and not re.search(r'\s', word.split('=', 1)[0]))


def _console_scripts() -> Dict[str, str]:
  """setup.py's console scripts: name -> 'module:function'."""
  with open(os.path.join(PROJECT_DIR, 'setup.py')) as f:
    tree = ast.parse(f.read())
  scripts = {}
  for node in ast.walk(tree):
    if isinstance(node, ast.Dict):
      for key, value in zip(node.keys, node.values):
        if (isinstance(key, ast.Constant) and key.value == 'console_scripts'
            and isinstance(value, (ast.List, ast.Tuple))):
          for item in value.elts:
            name, target = item.value.split('=', 1)
            scripts[name.strip()] = target.strip()
  return scripts


def _common_prefix(names: Sequence[str]) -> str:
  prefix = os.path.commonprefix(list(names)) if names else ''
  return prefix.rstrip('-_')


class Checker:
  """Checks commands, running each distinct --help and `make -n` once."""

  def __init__(self):
    self._helps: Dict[Tuple[str, ...], Help] = {}
    self._make: Dict[str, Tuple[int, str]] = {}
    self.console_scripts = _console_scripts()
    self._script_prefix = _common_prefix(list(self.console_scripts))
    self.checked: List[Command] = []

  # --- running the programs ---

  def _env(self):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    env['PYTHONPATH'] = os.pathsep.join(
        p for p in (PROJECT_DIR, env.get('PYTHONPATH')) if p)
    return env

  def help(self, program: Tuple[str, ...]) -> Help:
    if program not in self._helps:
      result = subprocess.run(
          [sys.executable, *program, '--help'], cwd=PROJECT_DIR,
          env=self._env(), capture_output=True, text=True, timeout=600)
      if result.returncode:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        self._helps[program] = Help({}, [], error=' / '.join(tail))
      else:
        self._helps[program] = _parse_help(result.stdout)
    return self._helps[program]

  def make_dry_run(self, target: str) -> Tuple[int, str]:
    """(exit status, recipe) of `make -n TARGET` with ARGS set to a marker."""
    if target not in self._make:
      result = subprocess.run(
          ['make', '-n', *([target] if target else []),
           f'ARGS={_ARGS_MARKER}'], cwd=PROJECT_DIR,
          capture_output=True, text=True, timeout=120)
      self._make[target] = (result.returncode, result.stdout + result.stderr)
    return self._make[target]

  # --- checking ---

  def check_text(self, text: str, name: str) -> List[str]:
    problems = []
    for command in commands(text, name):
      problems += [f'{command.where}: `{shlex.join(command.argv)}`: {p}'
                   for p in self.check(command)]
    return problems

  def check(self, command: Command) -> List[str]:
    words = list(command.argv)
    if words and words[0] == '<unparsable>':
      return [f'cannot parse: {words[2]}']
    while words and (_ENV_ASSIGNMENT.match(words[0])
                     or words[0] in _PREFIXES):
      words.pop(0)
    if not words:
      return []
    program = os.path.basename(words[0])
    self.checked.append(command)
    if _PYTHON.match(program):
      return self._check_python(words[1:])
    if program == 'make':
      return self._check_make(words[1:])
    if program in self.console_scripts:
      module, function = self.console_scripts[program].split(':')
      code = f'import sys; from {module} import {function}; sys.exit({function}())'
      return self._check_args(('-c', code), program, words[1:])
    if self._script_prefix and program.startswith(self._script_prefix):
      return [f'no console script {program!r} in setup.py '
              f'(there are: {", ".join(sorted(self.console_scripts))})']
    return []  # Not the project's: docker, kubectl, tensorboard, ...

  def _check_python(self, args: List[str]) -> List[str]:
    while args and args[0].startswith('-') and not args[0].startswith('-m'):
      if args[0] == '-c':
        return []
      args = args[1:]  # An interpreter option: -u, -S, ...
    if not args:
      return []
    if args[0].startswith('-m'):
      module = args[0][2:] or (args[1] if len(args) > 1 else '')
      rest = args[1:] if args[0][2:] else args[2:]
      try:
        found = importlib.util.find_spec(module) is not None
      except ImportError:
        found = False
      if not found:
        return [f'no module {module!r}']
      if not self._in_project(module.split('.')[0]):
        return []  # pytest, venv, ...: their flags are theirs.
      return self._check_args(('-m', module), f'python -m {module}', rest)
    script = args[0]
    path = os.path.join(PROJECT_DIR, script)
    if not os.path.isfile(path):
      return [f'no file {script!r} in the project']
    return self._check_args((script,), script, args[1:])

  @staticmethod
  def _in_project(top: str) -> bool:
    return (os.path.isdir(os.path.join(PROJECT_DIR, top))
            or os.path.isfile(os.path.join(PROJECT_DIR, top + '.py')))

  def _check_args(self, program: Tuple[str, ...], shown: str,
                  args: Sequence[str]) -> List[str]:
    """Flags and subcommands of `args` against the program's --help."""
    if not args:
      return []
    chain: Tuple[str, ...] = ()
    known: Dict[str, bool] = {}
    current = self.help(program)
    if current.error:
      return [f'`{shown} --help` failed: {current.error}']
    known.update(current.flags)
    problems = []
    i = 0
    while i < len(args):
      word = args[i]
      if _is_flag(word):
        name = word.split('=', 1)[0]
        if name not in known:
          problems.append(
              f'{shown}{"".join(" " + c for c in chain)} has no flag {name}')
        elif known[name] and '=' not in word:
          i += 1  # Its value.
      elif current.subcommands:
        if word not in current.subcommands:
          problems.append(f'{shown}{"".join(" " + c for c in chain)} has no '
                          f'subcommand {word!r} (it has: '
                          f'{", ".join(current.subcommands)})')
          break
        chain += (word,)
        current = self.help(program + chain)
        if current.error:
          return problems + [f'`{shown} {" ".join(chain)} --help` failed: '
                             f'{current.error}']
        known.update(current.flags)
      i += 1
    return problems

  def _check_make(self, args: List[str]) -> List[str]:
    targets, variables = [], {}
    i = 0
    while i < len(args):
      word = args[i]
      if word in ('-C', '-f', '-I', '-o', '-W'):
        i += 1
      elif word.startswith('-'):
        pass
      elif '=' in word:
        name, value = word.split('=', 1)
        variables[name] = value
      else:
        targets.append(word)
      i += 1
    problems = []
    for target in targets or ['']:
      status, output = self.make_dry_run(target)
      if status:
        problems.append(f'no make target {target!r}: {output.strip()[-200:]}')
        continue
      if 'ARGS' not in variables:
        continue
      recipe = [line for line in output.splitlines() if _ARGS_MARKER in line]
      if not recipe:
        problems.append(f'make {target} does not use ARGS')
        continue
      for line in recipe:
        words = shlex.split(line)
        at = words.index(_ARGS_MARKER)
        words[at:at + 1] = shlex.split(variables['ARGS'])
        problems += self.check(Command('make', tuple(words)))
    # Other variables (PYTEST_ARGS: pytest's own flags) are not checked.
    return problems


@pytest.fixture(scope='module')
def checker():
  return Checker()


def _read(name):
  with open(os.path.join(PROJECT_DIR, name)) as f:
    return f.read()


def _snippet(*lines, language='sh'):
  return '\n'.join([f'```{language}', *lines, '```', ''])


@pytest.mark.parametrize('name', DOCS)
def test_docs_name_only_what_exists(checker, name):
  problems = checker.check_text(_read(name), name)
  assert not problems, '\n'.join(problems)


def test_the_docs_have_commands_to_check(checker):
  found = {c.argv[:2] for name in DOCS for c in commands(_read(name), name)}
  assert ('make', 'run') in found and ('make', 'test') in found
  assert any(argv[1:2] == ('local_runner.py',) for argv in found)


def test_a_made_up_flag_is_reported(checker):
  problems = checker.check_text(_snippet(
      'python local_runner.py --data-dir DATA --no-such-flag',
      'make run ARGS="--epochs 3 --no-such-make-flag"',
      '.venv/bin/python -m inspector runs --no-such-inspect-flag',
      'python kubeflow/submit.py kfp run --host URL --no-such-submit-flag',
      'image-pipeline-inspect runs --limit 3 --no-such-console-flag',
  ), 'snippet')
  for flag in ('--no-such-flag', '--no-such-make-flag',
               '--no-such-inspect-flag', '--no-such-submit-flag',
               '--no-such-console-flag'):
    assert any(f'no flag {flag}' in p for p in problems), (flag, problems)
  assert len(problems) == 5, problems


def test_a_made_up_make_target_module_script_or_subcommand_is_reported(
    checker):
  problems = checker.check_text(_snippet(
      'make no-such-target',
      'make test ARGS="--epochs 3"',
      'python -m no_such_module --help',
      'python -m inspector.no_such_part',
      'python no_such_script.py',
      'image-pipeline-no-such-tool --help',
      'python -m inspector no-such-command',
  ), 'snippet')
  expected = ["no make target 'no-such-target'", 'make test does not use ARGS',
              "no module 'no_such_module'", "no module 'inspector.no_such_part'",
              "no file 'no_such_script.py'",
              "no console script 'image-pipeline-no-such-tool'",
              "has no subcommand 'no-such-command'"]
  for text in expected:
    assert any(text in p for p in problems), (text, problems)
  assert len(problems) == len(expected), problems


def test_shell_syntax_is_read_as_a_shell_would(checker):
  text = _snippet(
      '$ MLMD_MYSQL_PASSWORD=x python local_runner.py --data-dir DATA \\',
      '    --output-dir OUT   # a comment with --not-a-flag',
      'export MLMD_MYSQL_PASSWORD=... && make test PYTEST_ARGS="-n 0 --x"',
      "kubectl port-forward svc/x 8080:80 & python -m inspector anomalies -2",
      "make run ARGS='--beam-args=\"--runner=X --y=1\" --span-dir-pattern span-{SPAN}'",
  ) + _snippet('$ python -m inspector runs', '--output-of-the-command x',
               language='console') + _snippet('make --no-such-target-in-text',
                                              language='text')
  assert [c.argv for c in commands(text, 'snippet')] == [
      ('MLMD_MYSQL_PASSWORD=x', 'python', 'local_runner.py', '--data-dir',
       'DATA', '--output-dir', 'OUT'),
      ('export', 'MLMD_MYSQL_PASSWORD=...'),
      ('make', 'test', 'PYTEST_ARGS=-n 0 --x'),
      ('kubectl', 'port-forward', 'svc/x', '8080:80'),
      ('python', '-m', 'inspector', 'anomalies', '-2'),
      ('make', 'run',
       'ARGS=--beam-args="--runner=X --y=1" --span-dir-pattern span-{SPAN}'),
      ('python', '-m', 'inspector', 'runs'),
  ]
  assert checker.check_text(text, 'snippet') == []


def _anchor(heading: str) -> str:
  """GitHub's anchor of a Markdown heading."""
  return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def _anchors(text: str) -> set:
  anchors, in_block = set(), False
  for line in text.splitlines():
    if _FENCE.match(line):
      in_block = not in_block
    elif not in_block and line.startswith('#'):
      anchors.add(_anchor(line.lstrip('#')))
  return anchors


def link_problems(text: str, name: str) -> List[str]:
  """Relative links of `text` (the doc `name`) to a missing file or heading."""
  problems = []
  for target in re.findall(r'\]\(([^)\s]+)\)', text):
    if re.match(r'^[a-z]+:', target):
      continue  # http:, mailto: ...
    path, _, anchor = target.partition('#')
    path = os.path.normpath(os.path.join(os.path.dirname(name), path or
                                         os.path.basename(name)))
    if not os.path.exists(os.path.join(PROJECT_DIR, path)):
      problems.append(f'{name}: {target}: no file {path}')
    elif anchor and anchor not in _anchors(
        text if path == os.path.normpath(name) else _read(path)):
      problems.append(f'{name}: {target}: no heading #{anchor} in {path}')
  return problems


@pytest.mark.parametrize('name', DOCS)
def test_links_between_the_docs_lead_somewhere(name):
  problems = link_problems(_read(name), name)
  assert not problems, '\n'.join(problems)


def test_a_broken_link_is_reported():
  text = ('# Here\n[a](docs/no-such-page.md) [b](docs/serving.md#no-such) '
          '[c](#here) [d](#not-here) [e](https://example.com/x.md)\n')
  assert link_problems(text, 'README.md') == [
      'README.md: docs/no-such-page.md: no file docs/no-such-page.md',
      'README.md: docs/serving.md#no-such: no heading #no-such in docs/serving.md',
      'README.md: #not-here: no heading #not-here in README.md',
  ]


# --- defaults quoted in the docs ---

# 'default 20', '(default: 0.99)', 'default `imagenet`': the value after it.
_QUOTED_DEFAULT = re.compile(
    r'\bdefault:?\s+(`[^`\s]+`|-?\d[\d,]*(?:\.\d+)?)(?![\w.]*\w)')
# '`--learning-rate` (0.003)': a flag in code, then a bare number in brackets.
_FLAG_THEN_NUMBER = re.compile(
    r'`(--[a-z][\w-]*)(?: [^`]*)?`\s*\((-?\d[\d,]*(?:\.\d+)?)\)')
_FLAG = re.compile(r'(?<![\w-])--[a-z][\w-]*')
# How far before a quoted default its flag may be named, within a passage.
_NEARBY = 300


def knob_defaults() -> Dict[str, Any]:
  """Every knob's flag -> its default, in the flag's unit (to_flag): the
  configs pipeline/knobs.py holds or imports, and those nested in them."""
  from pipeline import knobs  # pylint: disable=g-import-not-at-top
  defaults = {}

  def walk(config_class):
    for field in dataclasses.fields(config_class):
      if dataclasses.is_dataclass(field.default_factory):
        walk(field.default_factory)
      elif field.metadata.get('flag') and field.default is not dataclasses.MISSING:
        to_flag = field.metadata.get('to_flag', lambda value: value)
        defaults[field.metadata['flag']] = to_flag(field.default)

  for value in vars(knobs).values():
    if isinstance(value, type) and dataclasses.is_dataclass(value):
      walk(value)
  return defaults


def _passages(text: str) -> Iterator[Tuple[int, str]]:
  """(first line, text) of each paragraph, list item or table row outside
  fenced blocks: the span a flag and its quoted default share."""
  lines, start, in_block = [], 0, False

  def flush():
    if lines:
      yield start, ' '.join(lines)
    lines.clear()

  for number, line in enumerate(text.splitlines(), 1):
    if _FENCE.match(line):
      in_block = not in_block
      yield from flush()
      continue
    stripped = line.strip()
    if in_block or not stripped:
      yield from flush()
      continue
    if stripped.startswith(('|', '#', '- ', '* ')) or re.match(
        r'^\d+\. ', stripped):
      yield from flush()
    if not lines:
      start = number
    lines.append(stripped)
    if stripped.startswith(('|', '#')):
      yield from flush()
  yield from flush()


def quoted_defaults(text: str) -> Iterator[Tuple[int, str, str]]:
  """(line, flag, value) of each default the text quotes for a flag it
  names nearby: in a table row whose first cell names one flag, that flag;
  else the nearest flag before it in the same passage."""
  for line, passage in _passages(text):
    for match in _FLAG_THEN_NUMBER.finditer(passage):
      yield line, match.group(1), match.group(2)
    row_flags = (_FLAG.findall(re.split(r'(?<!\\)\|', passage)[1])
                 if passage.startswith('|') else [])
    if len(row_flags) > 1:
      continue  # '`--image-size HxW`, `--channels 1|3`': whose default?
    for match in _QUOTED_DEFAULT.finditer(passage):
      before = passage[max(0, match.start() - _NEARBY):match.start()]
      flags = row_flags or _FLAG.findall(before)
      if flags:
        yield line, flags[-1], match.group(1)


def _same(quoted: str, default: Any) -> bool:
  quoted = quoted.strip('`')
  if isinstance(default, (int, float)):
    try:
      return float(quoted.replace(',', '')) == float(default)
    except ValueError:
      return False
  return quoted == str(default)


def default_problems(text: str, name: str,
                     defaults: Dict[str, Any]) -> List[str]:
  """Defaults `text` quotes for a knob's flag that are not its default."""
  # A default of None is worked out at run time ('auto'), and a boolean's
  # is its flag's absence: the docs describe those in words.
  return [f'{name}:{line}: {flag} quoted with default {value}, but its '
          f'knob\'s default is {defaults[flag]!r}'
          for line, flag, value in quoted_defaults(text)
          if flag in defaults and defaults[flag] is not None
          and not isinstance(defaults[flag], bool)
          and not _same(value, defaults[flag])]


@pytest.fixture(scope='module')
def defaults():
  return knob_defaults()


@pytest.mark.parametrize('name', DOCS)
def test_defaults_quoted_in_the_docs_are_the_knobs(defaults, name):
  problems = default_problems(_read(name), name, defaults)
  assert not problems, '\n'.join(problems)


def test_a_wrong_quoted_default_is_reported(defaults):
  text = _snippet('--eval-percent 7') + '\n'.join([
      '| `--eval-percent N` | the share put in eval (default 21) |',
      '| `--validation-percent N` | held out (default 10; 0: none) |',
      '',
      '- With `--num-shards`',
      '  files (default: 17) of records.',
      '- **Adam**: `--learning-rate` (0.5) and `--label-smoothing X` (0.1).',
      '- `--tune-search`, default `nothing`; `--output-dir` (default `outputs/`).',
      '',
      'A paragraph without a flag (default 99).',
  ])
  assert default_problems(text, 'snippet', defaults) == [
      f'snippet:{line}: {flag} quoted with default {value}, but its knob\'s '
      f'default is {defaults[flag]!r}' for line, flag, value in [
          (4, '--eval-percent', '21'), (7, '--num-shards', '17'),
          (9, '--learning-rate', '0.5'), (10, '--tune-search', '`nothing`')]]


def _section_headings() -> List[str]:
  return [line[3:] for line in _read('BENCHMARKS.md').splitlines()
          if line.startswith('## ')]


def test_benchmark_sections_cited_by_name_are_one_each():
  """A citation such as (BENCHMARKS.md, "MNIST time to accuracy") opens
  exactly one of BENCHMARKS.md's section headings."""
  headings = _section_headings()
  cited = re.compile(
      r'BENCHMARKS\.md(?:\]\([^)]*\))?[,(\s#\'"]*"([^"]+)"')
  names = {}
  for folder, subfolders, files in os.walk(PROJECT_DIR):
    # Not the project's own text: hidden folders (.venv), run outputs.
    subfolders[:] = [d for d in subfolders
                     if not d.startswith('.') and d != 'outputs']
    for path in (os.path.join(folder, f) for f in files
                 if f.endswith(('.py', '.md'))):
      with open(path) as f:
        for name in cited.findall(f.read()):
          names.setdefault(' '.join(name.split()),
                           os.path.relpath(path, PROJECT_DIR))
  assert 'MNIST time to accuracy' in names
  problems = [f'{where}: "{name}" opens {count} section headings of '
              'BENCHMARKS.md' for name, where in names.items()
              if (count := sum(h.startswith(name) for h in headings)) != 1]
  assert not problems, '\n'.join(problems)


def test_the_isa_capped_time_to_accuracy_heading_is_the_generators():
  from benchmarks import time_to_accuracy  # pylint: disable=g-import-not-at-top
  headings = _section_headings()
  for isa_cap in (None, 'AVX2'):
    assert time_to_accuracy.heading(isa_cap)[3:] in headings
