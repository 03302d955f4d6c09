"""The annotation app's pages, one router per audience, sharing :class:`heart.annotation.pages.Site` through
``app.state.site``: :mod:`.worker` (a person's own link: tasks, consent, practice), :mod:`.entry` (a crowd
platform's study link) and :mod:`.coordinator` (the coordinator's page and adjudication)."""
