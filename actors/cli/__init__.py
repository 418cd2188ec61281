"""The command line: ``python -m actors run|check|status JOBFILE`` (docs/cli.md).

Pure parts: the job file (``jobfile``, ``jobkeys``), the file-versus-store diff
(``reconcile``) and what is shown of each task (``rows``). The rest drives a ``Scheduler``
(``service``, ``apply``, ``holdback``, ``run``) or prints (``check``, ``status``,
``live_view``, the only module that imports ``rich``).
"""
