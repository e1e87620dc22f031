"""The one error the inspection tool reports to its user."""


class InspectError(Exception):
  """A problem the user can fix (missing store, unknown id or run...).

  The command line prints the message on one line, without a traceback.
  """
