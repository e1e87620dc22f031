"""The MySQL password never on a command line: from the MySQL client's option
file (--mysql-defaults-file) or $MLMD_MYSQL_PASSWORD, in the runner and the
inspect tool alike. No server needed: the options the store is opened with."""

import pytest

from inspector import commands
import local_runner
from metadata import store

HOST = ['--mysql-host', 'db.example.com', '--mysql-user', 'alice']


@pytest.fixture(params=['inspector', 'local_runner'])
def parse(request):
  if request.param == 'inspector':
    return lambda argv: commands.make_parser().parse_args(['runs', *argv])
  return local_runner.make_parser().parse_args


def test_no_command_takes_a_password(parse, capsys):
  with pytest.raises(SystemExit):
    parse([*HOST, '--mysql-password', 'hunter2'])
  assert 'unrecognized arguments: --mysql-password' in capsys.readouterr().err
  for parser in (commands.make_parser(), local_runner.make_parser()):
    assert '--mysql-password' not in parser.format_help()
    assert '--mysql-defaults-file' in parser.format_help()


def test_the_option_file_wins_over_the_environment(parse, tmp_path,
                                                   monkeypatch):
  monkeypatch.setenv(store.MYSQL_PASSWORD_ENV, 'from-env')
  assert store.mysql_options(parse(HOST)).password == 'from-env'
  option_file = tmp_path / 'my.cnf'
  option_file.write_text('[mysql]\npassword = not-this-one\n'
                         '[client]\nuser = alice\nskip-ssl\n'
                         'password = "from file"\n')
  options = store.mysql_options(
      parse([*HOST, '--mysql-defaults-file', str(option_file)]))
  assert options.password == 'from file'
  assert 'from file' not in repr(options)
  # An option file without a password leaves the environment's.
  option_file.write_text('[client]\nuser = alice\n')
  assert store.mysql_options(parse(
      [*HOST, '--mysql-defaults-file', str(option_file)])).password == (
          'from-env')


def test_an_option_file_that_cannot_be_read_is_named(parse, tmp_path):
  missing = tmp_path / 'nowhere.cnf'
  with pytest.raises(store.InspectError,
                     match=f'--mysql-defaults-file {missing}: cannot read it'):
    store.mysql_options(parse([*HOST, '--mysql-defaults-file', str(missing)]))
  garbage = tmp_path / 'garbage.cnf'
  garbage.write_text('password = no section\n')
  with pytest.raises(store.InspectError, match='not a MySQL option file'):
    store.mysql_options(parse([*HOST, '--mysql-defaults-file', str(garbage)]))
