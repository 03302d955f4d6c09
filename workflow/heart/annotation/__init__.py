"""Human data collection: tasks for people, the store of their answers, the web app, the export."""
