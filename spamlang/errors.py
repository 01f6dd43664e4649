"""The one exception type that means "the user asked for something invalid".

The CLI turns it into a single line on stderr and exit status 2; library callers catch it
(it is a ValueError) like any other bad-argument error.
"""


class UserError(ValueError):
    """Bad input from a user: a flag, a config, a sweep file or a path."""
