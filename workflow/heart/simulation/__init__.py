"""Test and rehearsal support: nothing here is a result, and nothing in the workflow's rules imports it.

* :mod:`.simulate` -- SIMULATED judgments and strategy tags, for validating the statistics and drawing the
  figures at paper scale (labelled SIMULATED wherever they go);
* :mod:`.simulator` -- a simulated OpenAI-compatible provider on 127.0.0.1 (``python -m
  heart.simulation.simulator``), answering with :mod:`.answers`; :mod:`.handle` runs it from Python
  (:class:`~heart.simulation.handle.Simulator`), for ``config/rehearsal.yaml`` and the rehearsal benchmark.
"""
