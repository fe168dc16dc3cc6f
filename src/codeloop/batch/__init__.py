"""``codeloop batch`` (issue 39): many tasks at once, in a local process pool or on a Ray cluster.

The tasks file (:mod:`.tasks`), the results file (:mod:`.results`), the loop that hands tasks
to an executor (:mod:`.driver`), the executors (:mod:`.pool`, :mod:`.ray_cluster`) and the
session log's mirror for tasks that move between nodes (:mod:`.log_mirror`). One task's run
is ``codeloop run``'s own Runner, so it lives beside it: ``cli/batch_task.py``.
"""
