"""A study's artifacts as one folder, both ways: the data release of the paper's §9.13, and the paper (or any
study) regenerated from it with no model call and no key.

The modules, by the rules they serve:

* :mod:`.pseudonyms` -- order-preserving pseudonyms for writers and raters (``writer-001``, ``rater-001``);
* :mod:`.export` (rule export_bundle, ``rules/bundle.smk``; ``make bundle``) -- every artifact of a run
  written to one folder in the formats the importers read, a manifest of sha256 per file, and
  :mod:`.datasheet` -- the folder's README (what each file is, licences, what was removed);
* :mod:`.load` (``make paper ARTIFACTS=<folder>``: ``config/artifacts.yaml``; rules bundle_items,
  bundle_pairs, bundle_verdicts, bundle_checks, bundle_tags) -- the folder checked against its manifest,
  its study settings as the run's config, and its tables as the workflow's own;
* :mod:`.check` (``python -m heart.bundle check <folder>``, ``make check-bundle``, first in ``make paper``) --
  every file and cross-reference checked before a run, and what the bundle holds.
"""
