"""WSGI middleware of the API pipeline (see ``cyborg.api.app``)."""
