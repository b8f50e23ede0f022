"""The one exception type that the CLI turns into a clean message and exit status 2."""


class CostlabError(Exception):
    """A user-facing error: bad config, bad file, unknown name.

    The message must say what is wrong and where (file, field, value). The CLI
    prints it without a traceback and exits with status 2.
    """

    exit_code = 2
