"""The small-model strategy of issue 33: draft, check, choose (docs/local-models.md, "Draft,
check, choose: groundwork").

Built so far, each part on its own and opt-in; nothing here is wired into ``Session`` yet:

- :mod:`.reply_format`: the one reply format (FILE blocks, one RUN line, or DONE), its llama.cpp
  GBNF grammar and the strict parser of what the grammar accepts;
- :mod:`.hunks`: applying a reply's FILE blocks to file texts (whole files, SEARCH/REPLACE).

The package never imports the Session or its turn guards (an import contract in
``pyproject.toml``): the strategy gets what it needs passed in.
"""
