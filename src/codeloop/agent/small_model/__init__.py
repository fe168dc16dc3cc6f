"""The small-model strategy of issue 33: draft, check, choose (docs/local-models.md, "Draft,
check, choose: groundwork").

Built so far, each part on its own and opt-in; nothing here is wired into ``Session`` yet:

- :mod:`.reply_format`: the one reply format (FILE blocks, one RUN line, or DONE), its llama.cpp
  GBNF grammar and the strict parser of what the grammar accepts;
- :mod:`.hunks`: applying a reply's FILE blocks to file texts (whole files, SEARCH/REPLACE);
- :mod:`.checks`: the checks found in the workspace (never in the task's wording): parse and
  import checks read here, and the tests, doctests and rerun commands to run in a scratch copy;
- :mod:`.choose`: ranking candidates by those checks, then agreement, then the greedy draft.
- :mod:`.judge`: all the checks of one candidate, the commands run as ``shell`` calls through
  the tool pipeline in a scratch overlay of the workspace
  (:class:`~codeloop.environments.scratch.ScratchExecutionEnvironment`).

The package never imports the Session, its turn guards or the rescues (the import contract
``small-model-apart`` in ``pyproject.toml``): the strategy gets what it needs passed in. Not
built yet: drafting candidates (the requests with their seeds and the grammar), the repair
round, and the Session wiring (an opt-in config key).
"""
