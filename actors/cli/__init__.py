"""The command line's pure parts: the job file it runs (``jobfile``)."""
